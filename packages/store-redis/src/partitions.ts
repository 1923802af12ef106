/// <reference path="./cluster-key-slot.d.ts" />
import { SwitchboardError } from '@switchboard/core';
import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from './redis-connection.js';
import { keptOutcomeKeysOf } from './redis-kept-outcomes.js';
import { replyOutboxKeysOf } from './reply-outbox-keys.js';

/**
 * Partitions of one deployment's keys over Redis Cluster (docs/design.md §5 "Partitions"): a
 * session's turns, and a chat's deliveries, live under the hash tag of their partition, so that
 * each partition is one slot and the partitions spread over the shards. Every replica computes
 * the same partition for the same key.
 */

/**
 * The prefix of partition `index` of `prefix`: its keys are `{<prefix>#<index>}:…`, and partition
 * 0's are the deployment's own `{<prefix>}:…`, where a pool of one partition keeps them: replicas
 * of both register there, so a replica counting partitions otherwise is refused
 * (`store.partitions` is part of the configuration they agree on).
 */
export function partitionPrefixOf(prefix: string, index: number): string {
  return index === 0 ? prefix : `${prefix}${PARTITION_MARK}${index}`;
}

/** Marks a partition's prefix; a configured prefix cannot hold it (`store.prefix`). */
const PARTITION_MARK = '#';

/** Whether `prefix` is a deployment's own (partition 0, or the one pool of an unpartitioned one). */
export function isDeploymentPrefix(prefix: string): boolean {
  return !prefix.includes(PARTITION_MARK);
}

/** Which of `partitions` holds `key` (a session key, a chat): CRC16 as Redis Cluster computes it. */
export function partitionOf(key: string, partitions: number): number {
  return calculateSlot(key) % partitions;
}

/**
 * Refuses `partitions` when it is not the deployment's recorded count while anything is kept
 * under that count (`SB_CONFIG_INVALID` naming `store.partitions`): a message queued or running,
 * a reply waiting in the outbox, an outcome kept until recorded. Each lives in the partition of
 * its session or chat, which another count may not read again, or reads beside a second
 * partition of the same session (two turns at once, replies out of order). Reads only: the count
 * is recorded (`recordPartitionCount`) once this replica's configuration is registered, so a
 * replica refused for another count records nothing.
 */
export async function checkPartitionCount(
  client: RedisClient,
  prefix: string,
  partitions: number,
): Promise<void> {
  const recorded = await recordedCount(client, prefix);
  if (recorded === partitions) return;
  for (let index = 0; index < recorded; index += 1) {
    const kept = await keptIn(client, partitionPrefixOf(prefix, index));
    if (kept !== undefined)
      throw new SwitchboardError('SB_CONFIG_INVALID', {
        message: `store.partitions is ${partitions}, but ${recorded} partitions still hold ${kept} (partition ${index}): drain them with store.partitions: ${recorded} before changing the count`,
      });
  }
}

/** Records `partitions` as the deployment's count (checked by `checkPartitionCount` first). */
export async function recordPartitionCount(
  client: RedisClient,
  prefix: string,
  partitions: number,
): Promise<void> {
  if ((await recordedCount(client, prefix)) === partitions) return;
  if (partitions === 1) await client.del(countKeyOf(prefix));
  else await client.set(countKeyOf(prefix), String(partitions));
}

const countKeyOf = (prefix: string) => `{${prefix}}:partitions`;

async function recordedCount(client: RedisClient, prefix: string): Promise<number> {
  return Number((await client.get(countKeyOf(prefix))) ?? 1);
}

/** What partition `prefix` still holds that its count must stay for, or undefined when nothing. */
async function keptIn(client: RedisClient, prefix: string): Promise<string | undefined> {
  const [pending, inflight] = await client.hmget(`{${prefix}}:counts`, 'pending', 'inflight');
  const messages = Number(pending ?? 0) + Number(inflight ?? 0);
  if (messages > 0) return `${messages} messages queued or running`;
  const replies = (await client.hvals(replyOutboxKeysOf(prefix).counts)).reduce(
    (sum, count) => sum + Number(count),
    0,
  );
  if (replies > 0) return `${replies} replies waiting to be sent`;
  const outcomes = await client.hlen(keptOutcomeKeysOf(prefix).hash);
  if (outcomes > 0) return `${outcomes} outcomes kept until recorded`;
  return undefined;
}

/**
 * Refuses a reply outbox that does not spread over the pool's partitions (`SB_CONFIG_INVALID`
 * naming both): a complete stores its turn's answer in the outbox's partition of the chat, which
 * must be the pool's partition of the session, under its hash tag; any other answer would fail
 * as the turn settles. `outboxPrefixes`: the outbox's `keyPrefixes`; `poolPrefix`: the prefix of
 * the pool, one of `partitions` (its partition's, in a partitioned pool).
 */
export function checkOutboxPartitions(
  outboxPrefixes: readonly string[],
  poolPrefix: string,
  partitions: number,
): void {
  const own = replyOutboxKeysOf(poolPrefix).prefix;
  if (outboxPrefixes.length === partitions && outboxPrefixes.includes(own)) return;
  throw new SwitchboardError('SB_CONFIG_INVALID', {
    message: `the reply outbox given to the query pool stores under ${outboxPrefixes.length} partition(s) (${outboxPrefixes.join(', ')}), the pool under ${partitions}, this one's at ${own}: give the pool the outbox of the same store.prefix and store.partitions`,
  });
}
