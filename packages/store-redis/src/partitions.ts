/// <reference path="./cluster-key-slot.d.ts" />
import { SwitchboardError } from '@switchboard/core';
import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from './redis-connection.js';

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
 * Records `partitions` as the deployment's count, refusing a change while the pool holds messages
 * under the count recorded before (`SB_CONFIG_INVALID` naming `store.partitions`): a session's
 * queued messages would stay in a partition its new one is not, to run beside or be stranded.
 * Replicas running now with another count are refused by the configuration they agree on.
 */
export async function recordPartitionCount(
  client: RedisClient,
  prefix: string,
  partitions: number,
): Promise<void> {
  const key = `{${prefix}}:partitions`;
  const recorded = Number((await client.get(key)) ?? 1);
  if (recorded === partitions) return;
  for (let index = 0; index < recorded; index += 1) {
    const counts = await client.hmget(`{${partitionPrefixOf(prefix, index)}}:counts`, 'pending', 'inflight');
    const held = counts.reduce((sum, value) => sum + Number(value ?? 0), 0);
    if (held > 0)
      throw new SwitchboardError('SB_CONFIG_INVALID', {
        message: `store.partitions is ${partitions}, but the pool still holds ${held} messages spread over ${recorded} partitions (partition ${index}): drain it with ${recorded} before changing the count`,
      });
  }
  if (partitions === 1) await client.del(key);
  else await client.set(key, String(partitions));
}
