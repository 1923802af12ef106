import { randomUUID } from 'node:crypto';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { infoField, redisReachable, startReplicatedRedis } from '@switchboard/testkit/redis';
import { startTcpProxy } from '@switchboard/testkit/tcp-proxy';
import { describe, expect, it } from 'vitest';
import { startFakePipeline } from './fake-pipeline.js';
import { serveOn, sharedStores } from './shared-stores.js';
import { eventually, get, post, useCleanups } from './serve-process.js';

const cleanup = useCleanups();
const reachable = (await redisReachable()) && (await postgresReachable());

/**
 * Two gateways on a Redis primary with one replica, behind one address (a TCP proxy, as a managed
 * endpoint), with `store.wait_replicas: waitReplicas`; both call one backend, which holds every
 * answer until `release()`.
 */
async function replicatedFleet(waitReplicas: number) {
  const redis = await startReplicatedRedis();
  cleanup(() => redis.remove());
  const proxy = await startTcpProxy(redis.primary.port);
  cleanup(() => proxy.close());
  const stores = sharedStores(cleanup, {
    redisUrl: `redis://127.0.0.1:${proxy.port}`,
    storeOptions: `wait_replicas: ${waitReplicas}, wait_timeout: 300ms`,
  });
  const backend = await startFakePipeline();
  cleanup(() => backend.close());
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const calls = new Map<string, number>();
  let open = 0;
  backend.respond = async (request) => {
    calls.set(request.text, (calls.get(request.text) ?? 0) + 1);
    open += 1;
    try {
      await released;
      return { status: 200, body: { replies: [{ text: `echo: ${request.text}` }] } };
    } finally {
      open -= 1;
    }
  };
  const pipeline = { id: 'bot', yaml: `{ id: bot, type: http, url: "${backend.url}", timeout: 60s }` };
  const extra = 'concurrency: { pipeline: 50 }';
  const replicas = [
    await serveOn(cleanup, stores, extra, pipeline),
    await serveOn(cleanup, stores, extra, pipeline),
  ];
  let sent = 0;

  return {
    replicas,
    calls,
    release,
    openCalls: () => open,
    /** Sends `text` on `session` (else one of its own), to the replicas in turn; the answer's status and id. */
    async send(text: string, session = `s-${randomUUID()}`) {
      const replica = replicas[sent++ % replicas.length] as (typeof replicas)[number];
      const answer = await post(`${replica.url}/v1/messages`, {
        session_id: session,
        user_id: 'u1',
        text,
        wait: false,
      });
      return {
        status: answer.status,
        id: answer.body?.id as string,
        retryAfter: answer.headers.get('retry-after'),
      };
    },
    /** Until the replica has applied everything the primary wrote so far. */
    async replicaCaughtUp() {
      await eventually(async () => {
        const [written, applied] = await Promise.all([
          infoField(redis.primary.url, 'replication', 'master_repl_offset'),
          infoField(redis.replica.url, 'replication', 'master_repl_offset'),
        ]);
        return written !== undefined && written === applied;
      });
    },
    /** The replica receives nothing more of the primary's writes: it lags from here on. */
    holdReplication() {
      redis.holdReplication();
    },
    /**
     * The primary dies (kill -9); its replica takes over at the same address, and the old
     * primary comes back empty as the new one's replica.
     */
    async failover() {
      await redis.failover();
      proxy.retarget(redis.replica.port);
      await redis.rejoin();
    },
    async statusOf(id: string): Promise<string | undefined> {
      for (const replica of replicas) {
        const answer = await get(`${replica.url}/v1/messages/${id}`).catch(() => undefined);
        if (answer?.status === 200) return answer.body?.status as string;
      }
      return undefined;
    },
    /** Until the pool holds nothing, waiting or running: nothing left in it can complete later. */
    async poolEmpty() {
      await eventually(
        async () => {
          const answer = await get(`${(replicas[0] as (typeof replicas)[number]).url}/admin/queues`).catch(
            () => undefined,
          );
          return answer?.status === 200 && answer.body.pending === 0 && answer.body.inflight === 0;
        },
        60_000,
        'the pool empty',
      );
    },
  };
}

type Fleet = Awaited<ReturnType<typeof replicatedFleet>>;

/**
 * Sends a message on each of `sessions`; every one must be acknowledged (202), or with
 * `untilAccepted` refused (503) until it is: each try has a text of its own.
 */
async function acknowledged(
  fleet: Fleet,
  label: string,
  sessions: readonly string[],
  { untilAccepted = false } = {},
) {
  const messages = [];
  for (const [index, session] of sessions.entries()) {
    for (let attempt = 0; ; attempt++) {
      const text = `${label} ${index}.${attempt}`;
      const answer = await fleet.send(text, session);
      if (untilAccepted && answer.status === 503) {
        await new Promise((resolve) => setTimeout(resolve, Number(answer.retryAfter) * 1000));
        continue;
      }
      expect(answer.status, `answer to ${text}`).toBe(202);
      messages.push({ text, id: answer.id });
      break;
    }
  }
  return messages;
}

async function completed(fleet: Fleet, ids: readonly string[]) {
  for (const id of ids)
    await eventually(async () => (await fleet.statusOf(id)) === 'completed', 60_000, `${id} completed`);
}

describe.skipIf(!reachable)(
  'a Redis failover under a fleet (kill -9 of the primary, its replica promoted)',
  () => {
    it('with wait_replicas: 0, loses the messages acknowledged while the replica lagged, and only those', {
      timeout: 120_000,
    }, async () => {
      const fleet = await replicatedFleet(0);
      const sessions = ['a', 'b', 'c', 'd'].map((name) => `${name}-${randomUUID()}`);
      const before = await acknowledged(fleet, 'before', sessions);
      await eventually(() => fleet.calls.size === 4, 30_000, 'the first four running');
      await fleet.replicaCaughtUp();
      fleet.holdReplication();
      // Each waits behind its session's running turn: in the pool only, which the replica lacks.
      const lagged = await acknowledged(fleet, 'lagged', sessions);
      await fleet.failover();
      fleet.release();

      await completed(
        fleet,
        before.map((message) => message.id),
      );
      await fleet.poolEmpty();
      await eventually(() => fleet.openCalls() === 0, 30_000, 'every backend call answered');
      const laggedStatuses = await Promise.all(lagged.map((message) => fleet.statusOf(message.id)));
      console.log(
        `wait_replicas 0: acknowledged while the replica lagged, after the failover: ${laggedStatuses.join(', ')}`,
      );
      expect(laggedStatuses.filter((status) => status === 'completed')).toEqual([]);
      expect(lagged.map((message) => fleet.calls.get(message.text) ?? 0)).toEqual([0, 0, 0, 0]);
    });

    it('with wait_replicas: 1, refuses (503) what the lagging replica does not hold and loses nothing acknowledged', {
      timeout: 120_000,
    }, async () => {
      const fleet = await replicatedFleet(1);
      const sessions = ['a', 'b', 'c', 'd'].map((name) => `${name}-${randomUUID()}`);
      const before = await acknowledged(fleet, 'before', sessions);
      await eventually(() => fleet.calls.size === 4, 30_000, 'the first four running');
      fleet.holdReplication();
      const refused = await Promise.all(
        [0, 1, 2].map((index) => fleet.send(`refused ${index}`, sessions[index])),
      );
      expect(refused.map((answer) => [answer.status, Number(answer.retryAfter) >= 1])).toEqual([
        [503, true],
        [503, true],
        [503, true],
      ]);
      await fleet.failover();
      fleet.release();
      // Sent as a client does: again after each 503's Retry-After, until the fleet is back.
      const after = await acknowledged(fleet, 'after', sessions, { untilAccepted: true });

      await completed(
        fleet,
        [...before, ...after].map((message) => message.id),
      );
      for (const { text } of [...before, ...after])
        expect(fleet.calls.get(text), `calls for ${text}`).toBe(1);
    });

    it('with wait_replicas: 1, under load, completes every acknowledged message exactly once across the failover', {
      timeout: 180_000,
    }, async () => {
      const fleet = await replicatedFleet(1);
      fleet.release();
      const accepted: Array<{ text: string; id: string }> = [];
      let refusals = 0;
      let sending = true;
      const senders = [0, 1, 2, 3].map(async (sender) => {
        for (let index = 0; sending; index++) {
          const text = `load ${sender}.${index}`;
          const answer = await fleet.send(text).catch(() => undefined);
          if (answer?.status === 202) accepted.push({ text, id: answer.id });
          else refusals += 1;
        }
      });
      await eventually(() => accepted.length >= 100, 60_000, '100 acknowledged before the failover');
      const atFailover = accepted.length;
      await fleet.failover();
      await eventually(
        () => accepted.length >= atFailover + 100,
        60_000,
        '100 acknowledged after the failover',
      );
      sending = false;
      await Promise.all(senders);

      await completed(
        fleet,
        accepted.map((message) => message.id),
      );
      console.log(
        `wait_replicas 1 under load: ${accepted.length} acknowledged (${atFailover} before the failover), ${refusals} refused, all completed`,
      );
      for (const { text } of accepted) expect(fleet.calls.get(text), `calls for ${text}`).toBe(1);
    });
  },
);
