import { afterEach, describe, expect, it, vi } from 'vitest';
import { probeRedisStore } from '../src/probe-redis.js';
import { redisReachable, startPrivateRedis } from './redis-harness.js';

// Each case on a Redis of its own, started with the settings it checks: the shared one's may differ.

const reachable = await redisReachable();
const PROBE = { timeoutMs: 2000, maxClockSkewMs: 2000 };

describe.skipIf(!reachable)('probeRedisStore', () => {
  const servers: Array<Awaited<ReturnType<typeof startPrivateRedis>>> = [];
  const redisWith = async (settings: string[] = []) => {
    const server = await startPrivateRedis(settings);
    servers.push(server);
    return server.url;
  };
  afterEach(async () => {
    vi.useRealTimers();
    await Promise.all(servers.splice(0).map((server) => server.remove()));
  });

  describe('when Redis is noeviction, append-only and on time', () => {
    it('passes every check', async () => {
      const found = await probeRedisStore({ url: await redisWith(), ...PROBE });
      expect(found.connection.level).toBe('ok');
      expect(found.eviction).toEqual({ level: 'ok', detail: 'maxmemory-policy noeviction' });
      expect(found.persistence).toEqual({ level: 'ok', detail: 'appendonly yes, appendfsync always' });
      expect(found.clock?.level).toBe('ok');
    });
  });

  describe('when Redis may evict and keeps nothing on disk', () => {
    it('fails the eviction policy and warns about persistence', async () => {
      const url = await redisWith(['--maxmemory-policy', 'allkeys-lru', '--save', '', '--appendonly', 'no']);
      const found = await probeRedisStore({ url, ...PROBE });
      expect(found.eviction).toMatchObject({
        level: 'fail',
        detail: expect.stringContaining('maxmemory-policy is allkeys-lru'),
        hint: expect.stringContaining('noeviction'),
      });
      expect(found.persistence).toMatchObject({
        level: 'warn',
        detail: expect.stringContaining('no persistence'),
      });
    });
  });

  describe('when Redis refuses CONFIG (a managed Redis)', () => {
    it('reads the policy and persistence from INFO instead of failing', async () => {
      const url = await redisWith(['--rename-command', 'CONFIG', '']);
      const found = await probeRedisStore({ url, ...PROBE });
      expect(found.eviction).toEqual({ level: 'ok', detail: 'maxmemory-policy noeviction' });
      expect(found.persistence).toEqual({ level: 'ok', detail: 'appendonly yes, appendfsync unknown' });
    });
  });

  describe("when this host's clock is off Redis' by more than the bound", () => {
    it('fails the clock check', async () => {
      const url = await redisWith();
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10_000 });
      const found = await probeRedisStore({ url, ...PROBE });
      expect(found.clock).toMatchObject({
        level: 'fail',
        detail: expect.stringMatching(/^clock skew -\d+ ms/),
      });
    });
  });

  describe('when Redis is unreachable', () => {
    it('fails the connection alone, without the password', async () => {
      const url = await redisWith();
      const port = new URL(url).port;
      await (servers[0] as Awaited<ReturnType<typeof startPrivateRedis>>).stop();
      const found = await probeRedisStore({
        url: `redis://:probe-password-secret@127.0.0.1:${port}`,
        ...PROBE,
      });
      expect(Object.keys(found)).toEqual(['connection']);
      expect(found.connection).toMatchObject({
        level: 'fail',
        detail: expect.stringContaining('unreachable'),
      });
      expect(JSON.stringify(found)).not.toContain('probe-password-secret');
    });
  });
});
