import { SwitchboardError } from '@switchboard/core';
import { type RedisClient, primaryOf } from './redis-connection.js';
import { ANSWERED_UNREPLICATED, type ScriptName } from './lua-scripts.js';

/**
 * How many Redis replicas must hold a write before the store answers for it (`WAIT`), and how
 * long to wait for them. Replication is asynchronous: without this, a failover can lose what a
 * replica had not yet received although the store already answered for it (docs/design.md §5
 * "Failover").
 */
export interface ReplicationOptions {
  replicas: number;
  /** At most `WAIT`'s block; under the command timeout (2 s) so commands queued behind it live. */
  timeoutMs: number;
}

/**
 * The error of a write Redis applied but fewer than `replicas` replicas acknowledged in time: the
 * write may be lost by a failover, so it is not answered for. Named apart from a lost reply so
 * that `mayHaveRun` reads it as applied (a repeat of the call is answered by the script's memory).
 */
class ReplicationTimeout extends Error {
  override name = 'ReplicationTimeout';
}

/**
 * Waits until `replicas` replicas hold every write this connection sent so far, or fails with
 * `SB_STORE_UNAVAILABLE` (retryable). `WAIT` blocks its connection in Redis, so one is in flight at
 * a time: writers that finish while it blocks share the next one, sent when it returns (one `WAIT`
 * per replication round trip, however many writers).
 */
export function replicationWaiter(
  client: RedisClient,
  prefix: string,
  { replicas, timeoutMs }: ReplicationOptions,
  retryAfterMs: number,
): () => Promise<void> {
  let inFlight: Promise<void> = Promise.resolve();
  let next: Promise<void> | undefined;

  async function waitOnce(): Promise<void> {
    let acknowledged: number;
    try {
      acknowledged = await primaryOf(client, prefix).wait(replicas, timeoutMs);
    } catch (err) {
      // Not sent, or refused (`UNBLOCKED` when the primary is demoted): the write itself ran.
      const reason = err instanceof Error ? err.message : String(err);
      throw notReplicated(`redis replication: the write's WAIT failed (${reason})`, err);
    }
    if (acknowledged >= replicas) return;
    throw notReplicated(
      `redis replication: ${acknowledged} of ${replicas} replicas acknowledged the write within ${timeoutMs} ms`,
    );
  }

  function notReplicated(message: string, cause?: unknown): SwitchboardError {
    return new SwitchboardError('SB_STORE_UNAVAILABLE', {
      message,
      retryable: true,
      retryAfterMs,
      cause: new ReplicationTimeout(message, { cause }),
    });
  }

  return () => {
    if (next !== undefined) return next;
    const sent = inFlight.then(() => {
      // Sent from here on: a writer arriving now finished after this WAIT left, so needs the next.
      next = undefined;
      const attempt = waitOnce();
      inFlight = attempt.catch(() => {});
      return attempt;
    });
    next = sent;
    return sent;
  };
}

/**
 * Answers a script's reply once `replication` replicas hold what it wrote (at once without
 * `replication`, or for a script in `ANSWERED_UNREPLICATED`).
 */
export function replicatedWrites(
  client: RedisClient,
  prefix: string,
  replication: ReplicationOptions | undefined,
  retryAfterMs: number,
): <Reply>(name: ScriptName, reply: Promise<Reply>) => Promise<Reply> {
  if (replication === undefined || replication.replicas === 0) return (_name, reply) => reply;
  const waitForReplicas = replicationWaiter(client, prefix, replication, retryAfterMs);
  return async (name, reply) => {
    const answer = await reply;
    if (!ANSWERED_UNREPLICATED.has(name)) await waitForReplicas();
    return answer;
  };
}
