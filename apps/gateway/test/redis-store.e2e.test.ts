import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { REDIS_URL, redisReachable, removePoolKeys, startPrivateRedis } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  eventually,
  get,
  post,
  runCli,
  startServe,
  tempDir,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();
const reachable = await redisReachable();

/** A gateway config on the pool of `url` under `prefix`, the audit file in `dir`. */
function redisConfig(dir: string, url: string, prefix: string, extra = ''): string {
  return `server: { host: 127.0.0.1, port: 0 }
store: { kind: redis, url: "${url}", prefix: ${prefix} }
audit: { path: ${join(dir, 'audit.db')} }
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
${extra}`;
}

/** `switchboard serve` on the pool of `url`; stopped and its keys removed after the test. */
async function serveOnRedis(url: string, prefix: string, extra = '') {
  const dir = tempDir();
  const configPath = writeConfig(dir, redisConfig(dir, url, prefix, extra));
  const gateway = await startServe({ dir, configPath });
  cleanup(async () => {
    await gateway.stop('SIGTERM');
    await removePoolKeys(url, prefix);
  });
  return gateway;
}

const message = (text: string) => ({ session_id: `s-${randomUUID()}`, user_id: 'u1', text });

describe.skipIf(!reachable)('store: redis (end to end)', () => {
  describe('when a newcomer follows the quick start with the pool in Redis', () => {
    it('answers a message with its reply, reports it completed and is ready', {
      timeout: 60_000,
    }, async () => {
      const gateway = await serveOnRedis(REDIS_URL, `sb-e2e-${randomUUID()}`);
      const answer = await post(`${gateway.url}/v1/messages`, message('hello over redis'));
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'hello over redis' }] });
      const status = await get(`${gateway.url}/v1/messages/${answer.body?.id}`);
      expect(status.body).toMatchObject({ status: 'completed' });
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready).toMatchObject({ status: 200, body: { checks: { store: { ok: true } } } });
    });
  });

  describe('when two replicas share one prefix', () => {
    it('refuses to start a replica whose limits differ, naming the difference', {
      timeout: 60_000,
    }, async () => {
      const prefix = `sb-e2e-${randomUUID()}`;
      await serveOnRedis(REDIS_URL, prefix, 'concurrency: { pipeline: 20 }');
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        redisConfig(dir, REDIS_URL, prefix, 'concurrency: { pipeline: 5 }'),
      );
      const refused = await runCli(['serve', '-c', configPath], { cwd: dir });
      expect(refused.code).not.toBe(0);
      const output = refused.stdout + refused.stderr;
      expect(output).toContain('SB_STORE_CONFIG_MISMATCH');
      expect(output).toMatch(/concurrency\.pipeline: this replica 5, the shared store 20/);
    });
  });

  describe('when Redis goes away and comes back', () => {
    it('answers 503 with Retry-After and is not ready meanwhile, then serves again by itself', {
      timeout: 120_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const gateway = await serveOnRedis(redis.url, 'outage');
      expect((await post(`${gateway.url}/v1/messages`, message('before'))).status).toBe(200);

      await redis.stop();
      const refused = await post(`${gateway.url}/v1/messages`, message('during'));
      expect(refused.status).toBe(503);
      expect(refused.body?.error.code).toBe('SB_STORE_UNAVAILABLE');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const notReady = await get(`${gateway.url}/readyz`);
      expect(notReady).toMatchObject({ status: 503, body: { checks: { store: { ok: false } } } });

      await redis.start();
      const after = await eventually(
        async () => {
          const answer = await post(`${gateway.url}/v1/messages`, message('after'));
          return answer.status === 200 ? answer : undefined;
        },
        30_000,
        'a 200 once Redis is back',
      );
      expect(after.body).toMatchObject({ status: 'completed', replies: [{ text: 'after' }] });
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
    });

    it('is not ready while Redis may evict keys (maxmemory-policy other than noeviction)', {
      timeout: 60_000,
    }, async () => {
      const redis = await startPrivateRedis();
      cleanup(() => redis.remove());
      const gateway = await serveOnRedis(redis.url, 'eviction');
      const admin = new Redis(redis.url);
      cleanup(async () => admin.quit());
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const notReady = await get(`${gateway.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(notReady.body.checks.store.detail).toContain('allkeys-lru');
    });
  });
});
