import {
  type Outcome,
  PipelinePolicySchema,
  type QueryPool,
  type Settlement,
  type Turn,
  createController,
} from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import {
  REDIS_URL,
  manualClock,
  openScriptRunner,
  queued,
  recordingLogger,
  redisReachable,
  usePrivateRedis,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

/** `fenceAfterMs` (10 s by default) + 50 s: how long a settled claim's tombstone lasts. */
const TOMBSTONE_MS = 60_000;

describe.skipIf(!reachable)('a settlement whose reply was lost (pool/includes/settlement.lua)', () => {
  describe('when the script is called again for a settled token', () => {
    const pools = usePools();

    async function settledToken() {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('B', clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      await runner.run('pool/claim', 'token-1', 15_000);
      expect(await runner.run('pool/complete', 'token-1', '0', TOMBSTONE_MS, '', 15_000)).toEqual([
        'settled',
        1,
        -1,
        [],
      ]);
      return { clock, pool, runner, stats: await pool.stats() };
    }

    it('answers settled to a flagged repeat of the same settlement and changes nothing', async () => {
      const { pool, runner, stats } = await settledToken();
      try {
        expect(await runner.run('pool/complete', 'token-1', '1', TOMBSTONE_MS, '', 15_000)).toEqual([
          'settled',
          1,
          -1,
          [],
        ]);
        expect(await pool.stats()).toEqual(stats);
      } finally {
        await runner.close();
      }
    });

    it('answers lost to a repeat without the flag, or of another settlement', async () => {
      const { pool, runner, stats } = await settledToken();
      try {
        expect(await runner.run('pool/complete', 'token-1', '0', TOMBSTONE_MS, '', 15_000)).toEqual(['lost']);
        expect(await runner.run('pool/retry', 'token-1', '1', TOMBSTONE_MS, '', 15_000, 0)).toEqual(['lost']);
        expect(await runner.run('pool/abandon', 'token-1', '1', TOMBSTONE_MS, '1')).toEqual(['lost']);
        expect(
          await runner.run('pool/complete', 'token-never-claimed', '1', TOMBSTONE_MS, '', 15_000),
        ).toEqual(['lost']);
        expect(await pool.stats()).toEqual(stats);
      } finally {
        await runner.close();
      }
    });

    it('answers the turn its first call claimed to a flagged repeat, and claims no second', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now });
      for (const session of ['A', 'B', 'C']) await pool.enqueue(queued(session, clock.now()));
      const runner = await openScriptRunner(REDIS_URL, pools.prefix, clock.now);
      try {
        await runner.run('pool/claim', 'token-1', 15_000);
        const first = (await runner.run('pool/complete', 'token-1', '0', TOMBSTONE_MS, 'next-1', 15_000)) as [
          string,
          number,
          number,
          unknown[],
        ];
        expect(first.slice(0, 3)).toEqual(['settled', 1, -1]);
        expect(first[3].slice(0, 2)).toEqual(['next-1', 'B']);
        const stats = await pool.stats();
        expect(stats).toMatchObject({ pending: 1, inflight: 1 });
        expect(await runner.run('pool/complete', 'token-1', '1', TOMBSTONE_MS, 'next-1', 15_000)).toEqual(
          first,
        );
        expect(await pool.stats()).toEqual(stats);
      } finally {
        await runner.close();
      }
    });

    it('answers lost to a flagged repeat once the tombstone has expired', async () => {
      const { clock, runner } = await settledToken();
      try {
        clock.advance(TOMBSTONE_MS - 1);
        expect(await runner.run('pool/complete', 'token-1', '1', TOMBSTONE_MS, '', 15_000)).toEqual([
          'settled',
          1,
          -1,
          [],
        ]);
        clock.advance(1);
        expect(await runner.run('pool/complete', 'token-1', '1', TOMBSTONE_MS, '', 15_000)).toEqual(['lost']);
      } finally {
        await runner.close();
      }
    });
  });

  describe('when a settlement times out after Redis ran it', () => {
    const paused = usePrivateRedis();
    const { pools, inflight } = paused;

    const failFast = () => () => new Redis(paused.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 });
    const tombstones = () => paused.admin.zcard(`{${pools.prefix}}:settled`);

    /** Settles while Redis holds writes: the call times out, and Redis runs it afterwards. */
    async function settleUnanswered(settle: () => Promise<Settlement>) {
      await paused.admin.client('PAUSE', 600, 'WRITE');
      await expect(settle()).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
      await eventually(async () => (await inflight()) === 0, 5000, 'Redis ran the settlement');
    }

    const settlements: Array<[string, (pool: QueryPool, turn: Turn) => Promise<Settlement>]> = [
      ['complete', (pool, turn) => pool.complete(turn)],
      ['retry', (pool, turn) => pool.retry(turn, 1000)],
      ['abandon', (pool, turn) => pool.abandon(turn)],
    ];
    it.each(settlements)(
      'answers settled when the caller writes the %s again, and lost to a further one',
      async (_name, settle) => {
        const clock = manualClock();
        const pool = await pools.open({ now: clock.now, createClient: failFast() });
        await pool.enqueue(queued('A', clock.now()));
        const turn = (await pool.claim()) as Turn;
        await settleUnanswered(() => settle(pool, turn));
        const after = await pool.stats();

        expect(await settle(pool, turn)).toBe('settled');
        expect(await pool.stats()).toEqual(after);
        expect(await settle(pool, turn)).toBe('lost');
      },
    );

    it('keeps the turn through the renewals meanwhile, and its tombstone expires', async () => {
      const clock = manualClock();
      const leaseMs = 15_000;
      const pool = await pools.open({ now: clock.now, createClient: failFast(), renewEveryMs: 20, leaseMs });
      const lost: string[] = [];
      pool.onLeaseLost((token) => lost.push(token));
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      await settleUnanswered(() => pool.complete(turn));

      // A round starts only once the previous one was handled: the second heartbeat proves that
      // the pool has handled a whole renewal made after the settlement.
      const heartbeat = async () =>
        Number(await paused.admin.zscore(`{${pools.prefix}}:replicas`, pool.replicaId));
      for (const round of ['a renewal', 'a second renewal']) {
        clock.advance(1_000);
        await eventually(async () => (await heartbeat()) === clock.now() + leaseMs, 5000, round);
      }
      expect(lost).toEqual([]);
      expect(await pool.complete(turn)).toBe('settled');
      expect(await tombstones()).toBe(1);

      clock.advance(TOMBSTONE_MS);
      await eventually(async () => (await tombstones()) === 0, 5000, 'the tombstone purged by a renewal');
      expect(lost).toEqual([]);
    });

    it('lets a controller record exactly one completed outcome for the message', async () => {
      const pool = await pools.open({ createClient: failFast(), pipelines: [{ id: 'p' }] });
      const logger = recordingLogger();
      const outcomes: Outcome[] = [];
      const sending = instantDelivery({ record: (outcome) => outcomes.push(outcome) });
      const controller = createController({
        pool,
        pipelines: new Map([
          [
            'p',
            {
              id: 'p',
              // Holds Redis' writes as the turn ends: the controller's complete times out.
              run: async (query) => {
                await paused.admin.client('PAUSE', 600, 'WRITE');
                return { replies: [{ text: query.text }] };
              },
            },
          ],
        ]),
        policies: new Map([['p', PipelinePolicySchema.parse({ id: 'p' })]]),
        outcomes: { record: (outcome) => outcomes.push(outcome) },
        outbox: sending.outbox,
        logger,
      });
      controller.start();
      try {
        const message = queued('A', Date.now());
        await pool.enqueue(message);
        await eventually(() => outcomes.length > 0, 10_000, 'an outcome');
        // The outcome comes from the outbox's delivery, which may end before the completion
        // written again: the pool is then emptied by that second write.
        await eventually(
          () =>
            logger.lines.some((line) =>
              line.message.startsWith('settlement failed: the store is unreachable'),
            ),
          10_000,
          'the completion written again',
        );
        await eventually(
          // Redis answers nothing while its writes are paused.
          async () => (await pool.stats().catch(() => null))?.inflight === 0,
          10_000,
          'the turn completed in the pool',
        );
        expect(outcomes.map((outcome) => [outcome.kind, outcome.message.id])).toEqual([
          ['completed', message.message.id],
        ]);
        expect(await pool.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      } finally {
        await controller.stop({ drainTimeoutMs: 0 });
      }
      expect(outcomes).toHaveLength(1);
    });
  });
});
