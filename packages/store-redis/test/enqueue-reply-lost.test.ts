import {
  type KeptOutcome,
  type Turn,
  isSwitchboardError,
  overflowOutcomeOf,
  requestIdOf,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  FAIL_FAST_OPTIONS,
  KEPT_OUTCOME_LEASE_MS,
  createRedisKeptOutcomes,
  createRedisQueryPool,
} from '../src/index.js';
import {
  REDIS_URL,
  manualClock,
  openScriptRunner,
  queued,
  recordingLogger,
  redisReachable,
  usePools,
  usePrivateRedis,
} from './redis-harness.js';

const reachable = await redisReachable();

/** `enqueueRepeatForMs` (5 s by default) + 50 s: how long an accepted enqueue is remembered. */
const REMEMBERED_MS = 55_000;

/** Keeps every outcome whole. */
const keepAll: KeptOutcome = (outcome) => JSON.stringify(outcome);

describe('the window of repeats', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])(
    'is refused with SB_CONFIG_INVALID when not a finite number of ms (%s), naming the option',
    async (enqueueRepeatForMs) => {
      const refusal = await createRedisQueryPool({
        url: 'redis://127.0.0.1:1',
        prefix: 'unused',
        concurrency: { global: 1, perSession: 1 },
        limits: { maxPending: 1, maxPendingPerSession: 1 },
        pipelines: [],
        enqueueRepeatForMs,
      }).catch((err: unknown) => err);
      expect(isSwitchboardError(refusal, 'SB_CONFIG_INVALID')).toBe(true);
      expect((refusal as { details: { problems: string[] } }).details.problems).toEqual([
        `enqueueRepeatForMs: must be 0 or a positive number of ms, got ${enqueueRepeatForMs}`,
      ]);
    },
  );
});

describe.skipIf(!reachable)('an enqueue whose reply was lost (pool/includes/enqueue-tokens.lua)', () => {
  describe('when the script is called again with a request id it accepted', () => {
    const pools = usePools();

    /**
     * The ARGV of `pool/enqueue` after the prefix, clock and replica, for `message` in a full
     * session; `repeat` as a lost reply's; `claimToken` to claim a turn in the same step.
     */
    function enqueueArgs(
      message: ReturnType<typeof queued>,
      deliveryKey: string,
      rememberedMs: number,
      repeat: '0' | '1' = '0',
      claimToken = '',
    ) {
      const { attempt: _attempt, acceptedAt: _acceptedAt, retryAtMs: _retryAtMs, ...payload } = message;
      return [
        JSON.stringify(payload),
        message.message.id,
        requestIdOf(message),
        message.session,
        message.pipeline,
        message.message.sender.id,
        0,
        '',
        deliveryKey,
        Date.UTC(2030, 0, 1),
        '0',
        message.message.channel,
        '',
        rememberedMs,
        repeat,
        claimToken,
        15_000,
      ];
    }

    it('judges another caller with the same request id by its delivery key: a second replay of one dead letter is a duplicate', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now });
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const replay = queued('A', clock.now(), { replayOf: 'dead-letter-1' });
        expect(
          ((await runner.run('pool/enqueue', ...enqueueArgs(replay, 'replay:1', 1000))) as unknown[])[0],
        ).toBe('accepted');
        expect(await runner.run('pool/enqueue', ...enqueueArgs(replay, 'replay:1', 1000))).toEqual([
          'duplicate',
        ]);
        expect(
          ((await runner.run('pool/enqueue', ...enqueueArgs(replay, 'replay:1', 1000, '1'))) as unknown[])[0],
        ).toBe('accepted');
        expect(await runner.client.hget(`{${pools.prefix}}:counts`, 'pending')).toBe('1');
      } finally {
        await runner.close();
      }
    });

    it('answers it again until it is forgotten, then judges the call anew, and purges what it kept', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, limits: { maxPending: 100, maxPendingPerSession: 1 } });
      await pool.enqueue(queued('A', clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const message = queued('A', clock.now());
        const first = (await runner.run('pool/enqueue', ...enqueueArgs(message, 'tg:1', 1000))) as unknown[];
        expect(first).toMatchObject(['accepted', 1, -1, [expect.any(Array)], []]);

        clock.advance(999);
        const stats = await pool.stats();
        expect(await runner.run('pool/enqueue', ...enqueueArgs(message, 'tg:1', 1000, '1'))).toEqual(first);
        expect(await pool.stats()).toEqual(stats);

        clock.advance(1);
        // Forgotten: the delivery key the first call marked decides now.
        expect(await runner.run('pool/enqueue', ...enqueueArgs(message, 'tg:1', 1000, '1'))).toEqual([
          'duplicate',
        ]);
        const rid = requestIdOf(message);
        expect(await runner.client.zscore(`{${pools.prefix}}:enqueued`, rid)).toBeNull();
        expect(await runner.client.exists(`{${pools.prefix}}:enqueued:${rid}`)).toBe(0);
      } finally {
        await runner.close();
      }
    });

    it('answers the turn its first call claimed, and claims no second', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const message = queued('B', clock.now());
        const first = (await runner.run(
          'pool/enqueue',
          ...enqueueArgs(message, 'tg:2', 1000, '0', 'ahead-1'),
        )) as unknown[];
        // The oldest head goes first: A's, not the message just accepted.
        expect(first.slice(0, 4)).toEqual(['accepted', 1, -1, []]);
        expect((first[4] as unknown[]).slice(0, 2)).toEqual(['ahead-1', 'A']);
        const stats = await pool.stats();
        expect(stats).toMatchObject({ pending: 1, inflight: 1 });
        expect(
          await runner.run('pool/enqueue', ...enqueueArgs(message, 'tg:2', 1000, '1', 'ahead-1')),
        ).toEqual(first);
        expect(await pool.stats()).toEqual(stats);
      } finally {
        await runner.close();
      }
    });

    it('accepted again once forgotten but not yet purged, answers what the new call dropped, not the old', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        limits: { maxPending: 1000, maxPendingPerSession: 1 },
      });
      await pool.enqueue(queued('A', clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const message = queued('A', clock.now());
        const first = (await runner.run('pool/enqueue', ...enqueueArgs(message, '', 1000))) as unknown[];
        expect(first).toMatchObject(['accepted', 1, -1, [expect.any(Array)], []]);
        // Entries forgotten before it, more than the purges of this test can take (bounded per
        // call): its entry outlives its time.
        const earlier = Array.from({ length: 300 }, (_, index) => [clock.now() + index, `older-${index}`]);
        await runner.client.zadd(`{${pools.prefix}}:enqueued`, ...earlier.flat());
        clock.advance(1000);

        // The same request id judged anew (its caller repeated it past the window), in a session
        // with room: it drops nothing.
        const again = { ...message, session: 'B' };
        expect(await runner.run('pool/enqueue', ...enqueueArgs(again, '', 1000, '1'))).toEqual([
          'accepted',
          1,
          -1,
          [],
          [],
        ]);
        expect(await runner.run('pool/enqueue', ...enqueueArgs(again, '', 1000, '1'))).toEqual([
          'accepted',
          1,
          -1,
          [],
          [],
        ]);
      } finally {
        await runner.close();
      }
    });

    it('once traffic stops, a renewal forgets as many as it purges delivery keys: 1000', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now });
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const enqueued = `{${pools.prefix}}:enqueued`;
        const remembered = Array.from({ length: 1000 }, (_, index) => [clock.now() + index, `rid-${index}`]);
        await runner.client.zadd(enqueued, ...remembered.flat());
        clock.advance(1000);
        const fingerprint = (await runner.client.hget(`{${pools.prefix}}:config`, 'fingerprint')) as string;
        await runner.run('pool/renew', 15_000, fingerprint, '');
        expect(await runner.client.zcard(enqueued)).toBe(0);
      } finally {
        await runner.close();
      }
    });

    it('is forgotten by a renewal too, with what it dropped, while nothing enqueues', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        renewEveryMs: 20,
        limits: { maxPending: 100, maxPendingPerSession: 1 },
      });
      const head = queued('A', clock.now());
      await pool.enqueue(head);
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        const message = queued('A', clock.now());
        await runner.run('pool/enqueue', ...enqueueArgs(message, '', 1000));
        const rid = requestIdOf(message);
        const kept = async () => [
          await runner.client.zscore(`{${pools.prefix}}:enqueued`, rid),
          await runner.client.exists(`{${pools.prefix}}:enqueued:${rid}`),
        ];
        expect(await kept()).toEqual([String(clock.now() + 1000), 1]);
        clock.advance(1000);
        await eventually(
          async () => JSON.stringify(await kept()) === JSON.stringify([null, 0]),
          5000,
          'purged by a renewal',
        );
        // The pool's own enqueue is remembered longer than it repeats one.
        expect(await runner.client.zscore(`{${pools.prefix}}:enqueued`, requestIdOf(head))).toBe(
          String(clock.now() - 1000 + REMEMBERED_MS),
        );
      } finally {
        await runner.close();
      }
    });
  });

  describe('when an enqueue times out after Redis ran it', () => {
    const paused = usePrivateRedis();
    const { pools } = paused;
    const failFast = () => () => new Redis(paused.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 });

    /** Enqueues while Redis holds writes for 600 ms: the first calls time out, and Redis runs them all afterwards. */
    async function whilePaused<T>(call: () => Promise<T>): Promise<T> {
      await paused.admin.client('PAUSE', 600, 'WRITE');
      return call();
    }

    it('repeats it with the same request id: accepted once, one message in the pool', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const pool = await pools.open({ now: clock.now, createClient: failFast(), logger });
      const message = queued('A', clock.now());

      expect(await whilePaused(() => pool.enqueue(message, { key: 'tg:9', ttlMs: 60_000 }))).toEqual({
        accepted: true,
        overflowed: [],
      });
      expect(logger.lines.filter((line) => line.level === 'warn')).toEqual([
        expect.objectContaining({
          bindings: expect.objectContaining({ messageId: message.message.id }),
          message: expect.stringMatching(/^enqueue reply lost: answered by a repeat/),
        }),
      ]);
      expect(await pool.stats()).toMatchObject({ pending: 1, sessions: 1 });
      const turn = (await pool.claim()) as Turn;
      expect(turn.messages.map((m) => m.message.id)).toEqual([message.message.id]);
      expect(await pool.complete(turn)).toBe('settled');
      expect(await pool.claim()).toBeNull();
    });

    it('answers the messages it dropped from the full session, whose outcome it kept for any replica', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        createClient: failFast(),
        limits: { maxPending: 100, maxPendingPerSession: 1 },
        keptOutcome: keepAll,
      });
      const oldest = queued('A', clock.now());
      await pool.enqueue(oldest);

      const result = await whilePaused(() => pool.enqueue(queued('A', clock.now())));
      expect(result).toEqual({ accepted: true, overflowed: [oldest] });
      expect(await pool.stats()).toMatchObject({ pending: 1 });

      // Had this replica died before recording them, another records them once their time came.
      const kept = await createRedisKeptOutcomes({ url: paused.url(), prefix: pools.prefix, now: clock.now });
      try {
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        const [recovered, ...others] = await kept.claimDue();
        expect(others).toEqual([]);
        expect(recovered).toMatchObject({ kind: 'dropped', reason: 'queue_overflow' });
        expect(recovered).toEqual(overflowOutcomeOf(oldest, recovered?.at as number));
      } finally {
        await kept.close();
      }
    });

    it('fails at enqueueRepeatForMs without waiting out the command timeout of the repeat under way', async () => {
      const clock = manualClock();
      // A repeat starts 1050 ms in and times out at 2050 ms: it is given up at 1100 ms.
      const pool = await pools.open({
        now: clock.now,
        createClient: () => new Redis(paused.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 1000 }),
        enqueueRepeatForMs: 1100,
      });
      const message = queued('A', clock.now());
      await paused.admin.client('PAUSE', 3000, 'WRITE');
      const startedAt = performance.now();
      const failure = await pool.enqueue(message).catch((err: unknown) => err);
      const elapsedMs = performance.now() - startedAt;
      expect(isSwitchboardError(failure, 'SB_STORE_UNAVAILABLE')).toBe(true);
      expect(elapsedMs).toBeGreaterThanOrEqual(1100);
      expect(elapsedMs).toBeLessThan(1600);

      // The calls still held run once Redis takes writes again: one message.
      await eventually(
        () =>
          pool.stats().then(
            (stats) => stats.pending === 1,
            () => false,
          ),
        5000,
        'the held calls applied',
      );
      expect(await pool.enqueue(message)).toEqual({ accepted: true, overflowed: [] });
      expect(await pool.stats()).toMatchObject({ pending: 1 });
    });

    it('that claimed its turn in the same step wakes the claim loop at once, whose next claim hands out that turn', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, createClient: failFast(), enqueueRepeatForMs: 300 });
      const claimedAhead: string[] = [];
      pool.onClaimedAhead((turn) => claimedAhead.push(turn.session));
      let woken = 0;
      pool.onRunnable(() => {
        woken += 1;
      });
      await paused.admin.client('PAUSE', 1500, 'WRITE');
      const failure = await pool.enqueue(queued('A', clock.now())).catch((err: unknown) => err);
      expect(isSwitchboardError(failure, 'SB_STORE_UNAVAILABLE')).toBe(true);
      expect(woken).toBeGreaterThan(0);
      const turn = await eventually(() => pool.claim().catch(() => null), 5000, 'the turn handed out');
      expect(turn?.session).toBe('A');
      expect(claimedAhead).toEqual([]);
      expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 1 });
    });

    it('fails with SB_STORE_UNAVAILABLE when Redis stays silent past enqueueRepeatForMs; the same message offered again is taken once', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, createClient: failFast(), enqueueRepeatForMs: 300 });
      const message = queued('A', clock.now());
      await paused.admin.client('PAUSE', 1500, 'WRITE');
      const failure = await pool.enqueue(message).catch((err: unknown) => err);
      expect(isSwitchboardError(failure, 'SB_STORE_UNAVAILABLE')).toBe(true);

      // A channel offering the message again (its accept threw) repeats the same request, as
      // often as it likes: while Redis still holds writes, and once it ran them all.
      await eventually(
        () =>
          pool.enqueue(message).then(
            (result) => result.accepted,
            () => false,
          ),
        5000,
        'the message offered again accepted',
      );
      expect(await pool.stats()).toMatchObject({ pending: 1 });
    });
  });
});
