import { replyOutboxContract } from '@switchboard/contracts';
import { describe } from 'vitest';
import { createRedisReplyOutbox } from '../src/index.js';
import { REDIS_URL, contractStores, redisReachable } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('redis', () => {
  // No `reopen`: the contract's reopened store starts without claims, as a store of one process
  // does, while a claim in Redis outlives its instance until its lease ends
  // (reply-outbox-replicas.test.ts shows what a later instance finds).
  replyOutboxContract('redis', () =>
    contractStores(
      (prefix) => createRedisReplyOutbox({ url: REDIS_URL, prefix, leaseMs: 60_000 }),
      (outbox) => outbox.close(),
    ),
  );
});
