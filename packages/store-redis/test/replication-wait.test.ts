import { isSwitchboardError } from '@switchboard/core';
import type { Redis as RedisClient } from 'ioredis';
import { deliveryFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { startReplicatedRedis } from '@switchboard/testkit/redis';
import { Redis } from 'ioredis';
import { mayHaveRun } from '../src/redis-connection.js';
import { replicationWaiter } from '../src/replication-wait.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queued, redisReachable, useReplyOutboxes, usePools } from './redis-harness.js';

const reachable = await redisReachable();

/** Every test here waits for the one replica. */
const ONE_REPLICA = { replicas: 1, timeoutMs: 200 };

describe.skipIf(!reachable)('writes answered only once a replica holds them (`replication`)', () => {
  let redis: Awaited<ReturnType<typeof startReplicatedRedis>>;
  let primaryAdmin: Redis;
  beforeAll(async () => {
    redis = await startReplicatedRedis();
    primaryAdmin = new Redis(redis.primary.url);
  });
  afterAll(async () => {
    primaryAdmin?.disconnect();
    await redis?.remove();
  });
  let frozen = false;
  const freezeReplica = () => {
    redis.replica.signal('SIGSTOP');
    frozen = true;
  };
  const thawReplica = () => {
    redis.replica.signal('SIGCONT');
    frozen = false;
  };
  afterEach(async () => {
    if (frozen) thawReplica();
    // The next test starts with the replica in sync: a thawed replica's acknowledgements (one a
    // second) resume, and until one arrives the primary reports the lag of the pause.
    await eventually(
      async () =>
        Number(
          /^slave0:.*state=online,.*lag=(\d+)/m.exec(await primaryAdmin.info('replication'))?.[1] ?? 99,
        ) <= 1,
      5000,
      'the replica in sync again',
    );
  });
  const pools = usePools(() => redis.primary.url);
  const outboxes = useReplyOutboxes(() => redis.primary.url);

  /** `WAIT` commands the primary has run so far. */
  const waitCalls = async () =>
    Number(/^cmdstat_wait:calls=(\d+)/m.exec(await primaryAdmin.info('commandstats'))?.[1] ?? 0);

  it('refuses an enqueue as SB_STORE_UNAVAILABLE while no replica acknowledges it, naming replication', async () => {
    const pool = await pools.open({ replication: ONE_REPLICA, enqueueRepeatForMs: 600 });
    freezeReplica();
    const refusal = await pool.enqueue(queued('s1', 1)).catch((err: unknown) => err);
    expect(isSwitchboardError(refusal, 'SB_STORE_UNAVAILABLE')).toBe(true);
    expect((refusal as Error).message).toMatch(/0 of 1 replicas acknowledged the write within 200 ms/);
  });

  it('without `replication`, answers the same enqueue while the replica is frozen (what a failover can lose)', async () => {
    const pool = await pools.open();
    freezeReplica();
    expect(await pool.enqueue(queued('s1', 1))).toMatchObject({ accepted: true });
  });

  it('answers a repeated enqueue once the replica returns, with the message taken once', async () => {
    const pool = await pools.open({ replication: ONE_REPLICA });
    freezeReplica();
    const before = await waitCalls();
    const answer = pool.enqueue(queued('s1', 1));
    // Thawed once a WAIT timed out: the pool repeats the enqueue with the same request id.
    await expect.poll(waitCalls, { timeout: 5000 }).toBeGreaterThan(before + 1);
    thawReplica();
    expect(await answer).toMatchObject({ accepted: true });
    expect((await pool.stats()).pending).toBe(1);
  });

  it('answers reads while the replica is frozen', async () => {
    const pool = await pools.open({ replication: ONE_REPLICA });
    await pool.enqueue(queued('s1', 1));
    freezeReplica();
    expect((await pool.stats()).pending).toBe(1);
  });

  it('is not ready while the replica stops acknowledging, naming store.wait_replicas, and ready again once it does', async () => {
    const pool = await pools.open({ replication: ONE_REPLICA });
    expect(await pool.health()).toEqual({ ok: true });
    freezeReplica();
    const notReady = await eventually(
      async () => {
        const health = await pool.health();
        return health.ok ? undefined : health;
      },
      8000,
      'not ready',
    );
    expect(notReady.detail).toBe(
      'redis has 0 replicas in sync, store.wait_replicas asks for 1: writes are refused',
    );
    thawReplica();
    await eventually(async () => (await pool.health()).ok, 8000, 'ready again');
  });

  it('shares one WAIT among writers that finish together', async () => {
    const pool = await pools.open({ replication: ONE_REPLICA });
    const before = await waitCalls();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, index) => pool.enqueue(queued(`s${index}`, 1))),
    );
    const waits = (await waitCalls()) - before;
    console.log(`50 concurrent enqueues: ${waits} WAIT commands`);
    expect(answers.every((answer) => answer.accepted)).toBe(true);
    expect(waits).toBeGreaterThan(0);
    expect(waits).toBeLessThan(25);
  });

  it('refuses a reply-outbox add as SB_STORE_UNAVAILABLE while no replica acknowledges it', async () => {
    const outbox = await outboxes.open({ replication: ONE_REPLICA });
    freezeReplica();
    const refusal = await outbox.add(deliveryFixture(1)).catch((err: unknown) => err);
    expect(isSwitchboardError(refusal, 'SB_STORE_UNAVAILABLE')).toBe(true);
  });
});

describe('a WAIT that fails itself', () => {
  it.each([
    [
      'never sent (the connection dropped after the write)',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ],
    [
      'refused (the primary demoted while it blocked)',
      Object.assign(
        new Error(
          'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
        ),
        { name: 'ReplyError' },
      ),
    ],
  ])('%s fails the write as SB_STORE_UNAVAILABLE that may have been applied', async (_case, failure) => {
    const client = { wait: () => Promise.reject(failure) } as unknown as RedisClient;
    const refusal = await replicationWaiter(client, 'replication', ONE_REPLICA, 1000)().catch(
      (err: unknown) => err,
    );
    expect(isSwitchboardError(refusal, 'SB_STORE_UNAVAILABLE')).toBe(true);
    expect(mayHaveRun(refusal)).toBe(true);
  });
});
