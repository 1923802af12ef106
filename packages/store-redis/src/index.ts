// The public surface of @switchboard/store-redis (docs/design.md §5 "Several replicas").
export { createRedisQueryPool } from './redis-query-pool.js';
export type {
  ConfigReport,
  FleetConfig,
  RedisQueryPool,
  RedisQueryPoolOptions,
  ReplicaView,
} from './redis-query-pool.js';
export type { SharedConfig, SharedPipelinePolicy } from './config-fingerprint.js';
export { FAIL_FAST_OPTIONS, redisClientFactory } from './redis-connection.js';
export type { RedisClientFactory } from './redis-connection.js';
export { checkRedisHealth } from './health.js';
// The scripts as the stores send them (includes inlined): a command log names a call by its SHA.
export { loadLuaScripts } from './lua-scripts.js';
export type { LuaScript } from './lua-scripts.js';
export { probeRedisStore } from './probe-redis.js';
export type { RedisProbe, RedisProbeOptions } from './probe-redis.js';
export { createAuditOutbox } from './audit-outbox.js';
export type { AuditOutbox, AuditOutboxOptions } from './audit-outbox.js';
export type { StoreHealth } from './health.js';
export { createRedisReplicaEvents, eventChannelOf, sessionChannelOf } from './redis-replica-events.js';
export type { RedisReplicaEvents, RedisReplicaEventsOptions } from './redis-replica-events.js';
export { channelLeaseKeysOf, createRedisChannelLeases } from './redis-channel-leases.js';
export type { RedisChannelLeases, RedisChannelLeasesOptions } from './redis-channel-leases.js';
export { createRedisRateBuckets, rateBucketKeyOf } from './redis-rate-buckets.js';
export type { RedisRateBuckets, RedisRateBucketsOptions } from './redis-rate-buckets.js';
export { DEFAULT_LEASE_TIMING } from './lease-timing.js';
export { createRedisReplyOutbox } from './redis-reply-outbox.js';
export type {
  AddedReply,
  RedisReplyOutbox,
  RedisReplyOutboxOptions,
  ReplyAddition,
  ReplyAdditions,
} from './redis-reply-outbox.js';
export { createPartitionedReplyOutbox } from './partitioned-reply-outbox.js';
export type { PartitionedReplyOutboxOptions } from './partitioned-reply-outbox.js';
export {
  KEPT_OUTCOME_LEASE_MS,
  KEPT_OUTCOME_MAX_CLAIMS,
  KEPT_OUTCOMES_PER_CLAIM,
  createRedisKeptOutcomes,
  keptOutcomeKeysOf,
} from './redis-kept-outcomes.js';
export type { RedisKeptOutcomes, RedisKeptOutcomesOptions } from './redis-kept-outcomes.js';
export { createPartitionedKeptOutcomes } from './partitioned-kept-outcomes.js';
export type { PartitionedKeptOutcomesOptions } from './partitioned-kept-outcomes.js';
export { createRedisHandoffStore, handoffKeysOf } from './redis-handoff-store.js';
export type { RedisHandoffStore, RedisHandoffStoreOptions } from './redis-handoff-store.js';
export type { ReplicationOptions } from './replication-wait.js';
export { createPartitionedQueryPool } from './partitioned-query-pool.js';
export type { PartitionedQueryPoolOptions } from './partitioned-query-pool.js';
export { createGlobalPermits, permitKeysOf } from './global-permits.js';
export type { ClaimPermits, GlobalPermits, GlobalPermitsOptions } from './global-permits.js';
export { partitionOf, partitionPrefixOf } from './partitions.js';
