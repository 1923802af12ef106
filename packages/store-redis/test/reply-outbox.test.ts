import { randomUUID } from 'node:crypto';
import { replyOutboxContract } from '@switchboard/contracts';
import { describe } from 'vitest';
import { createRedisReplyOutbox, type RedisReplyOutbox } from '../src/index.js';
import { REDIS_URL, redisReachable, removePoolKeys } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('redis', () => {
  // No `reopen`: the contract's reopened store starts without claims, as a store of one process
  // does, while a claim in Redis outlives its instance until its lease ends
  // (reply-outbox-replicas.test.ts shows what a later instance finds).
  replyOutboxContract('redis', async () => {
    const prefix = `sb-contract-${randomUUID()}`;
    const instances: RedisReplyOutbox[] = [];
    const open = async () => {
      const outbox = await createRedisReplyOutbox({ url: REDIS_URL, prefix, leaseMs: 60_000 });
      instances.push(outbox);
      return outbox;
    };
    return {
      store: await open(),
      peer: open,
      async close() {
        for (const outbox of instances) await outbox.close();
        await removePoolKeys(REDIS_URL, prefix);
      },
    };
  });
});
