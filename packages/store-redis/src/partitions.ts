/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from 'cluster-key-slot';

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
  return index === 0 ? prefix : `${prefix}#${index}`;
}

/** Which of `partitions` holds `key` (a session key, a chat): CRC16 as Redis Cluster computes it. */
export function partitionOf(key: string, partitions: number): number {
  return calculateSlot(key) % partitions;
}
