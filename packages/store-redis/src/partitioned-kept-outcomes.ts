import { type Outcome, SwitchboardError } from '@switchboard/core';
import { partitionOf, partitionPrefixOf } from './partitions.js';
import { createRedisClient } from './redis-connection.js';
import {
  KEPT_OUTCOMES_PER_CLAIM,
  type RedisKeptOutcomes,
  type RedisKeptOutcomesOptions,
  createRedisKeptOutcomes,
} from './redis-kept-outcomes.js';

export interface PartitionedKeptOutcomesOptions extends RedisKeptOutcomesOptions {
  /** How many partitions the deployment's sessions spread over (`store.partitions`), >= 1. */
  partitions: number;
}

/**
 * The kept outcomes of a partitioned deployment (docs/design.md §5 "Partitioned outbox and kept
 * outcomes"): a settlement in partition k (the pool's turns of a session of that partition, or
 * the outbox's deliveries of a chat of it) keeps its outcomes under that partition's tag, so an
 * outcome is forgotten in the partition of its session, and recovered from every partition in
 * turn. One connection serves them all: the caller's `client`, or one opened to `url` and closed
 * by `close()`.
 */
export async function createPartitionedKeptOutcomes(
  options: PartitionedKeptOutcomesOptions,
): Promise<RedisKeptOutcomes> {
  const { partitions: count, url, client: given, ...keptOptions } = options;
  if (!Number.isInteger(count) || count < 1) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: `partitioned kept outcomes: partitions must be a whole number >= 1, got ${count}`,
    });
  }
  if (given === undefined && url === undefined) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: 'partitioned kept outcomes need `url` or `client`',
    });
  }
  const client = given ?? createRedisClient(url as NonNullable<typeof url>);
  // Failures are answered per call; the event must not crash the process.
  if (given === undefined) client.on('error', () => {});
  const opened = await Promise.allSettled(
    Array.from({ length: count }, (_, index) =>
      createRedisKeptOutcomes({ ...keptOptions, client, prefix: partitionPrefixOf(options.prefix, index) }),
    ),
  );
  const parts = opened.flatMap((each) => (each.status === 'fulfilled' ? [each.value] : []));
  const failure = opened.find((each) => each.status === 'rejected');
  if (failure !== undefined) {
    await Promise.all(parts.map((part) => part.close()));
    if (given === undefined) client.disconnect();
    throw failure.reason;
  }
  /** The partition the next `claimDue` starts from: after the last one that had any. */
  let cursor = 0;

  return {
    forget(outcome: Outcome) {
      (parts[partitionOf(outcome.session, count)] as RedisKeptOutcomes).forget(outcome);
    },

    /**
     * Takes from the partitions in turn until `limit` in all. One that fails is passed (its
     * outcomes wait for it); the failure is thrown only when no other had any.
     */
    async claimDue(limit = KEPT_OUTCOMES_PER_CLAIM) {
      const taken: Outcome[] = [];
      let failure: { err: unknown } | undefined;
      const start = cursor;
      for (let offset = 0; offset < count && taken.length < limit; offset++) {
        const index = (start + offset) % count;
        try {
          const due = await (parts[index] as RedisKeptOutcomes).claimDue(limit - taken.length);
          if (due.length > 0) cursor = (index + 1) % count;
          taken.push(...due);
        } catch (err) {
          failure ??= { err };
        }
      }
      if (taken.length === 0 && failure !== undefined) throw failure.err;
      return taken;
    },

    start(record) {
      for (const part of parts) part.start(record);
    },

    stopRecovering() {
      for (const part of parts) part.stopRecovering();
    },

    async close() {
      await Promise.all(parts.map((part) => part.close()));
      if (given === undefined) await client.quit().catch(() => client.disconnect());
    },
  };
}
