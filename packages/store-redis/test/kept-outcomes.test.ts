import { type KeptOutcome, type Outcome, type Turn, outcomeKeyOf } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import {
  KEPT_OUTCOME_LEASE_MS,
  KEPT_OUTCOME_MAX_CLAIMS,
  type RedisKeptOutcomes,
  createRedisKeptOutcomes,
  keptOutcomeKeysOf,
} from '../src/index.js';
import {
  REDIS_URL,
  deadLetters,
  manualClock,
  queued,
  recordingLogger,
  redisReachable,
  usePools,
} from './redis-harness.js';

const reachable = await redisReachable();

/** Keeps every outcome but `completed` ones, whole. */
const keepAllButCompleted: KeptOutcome = (outcome) =>
  outcome.kind === 'completed' ? null : JSON.stringify(outcome);

describe.skipIf(!reachable)('createRedisKeptOutcomes with the pool', () => {
  const pools = usePools();
  const opened: RedisKeptOutcomes[] = [];
  const keptOn = async (
    now: () => number,
    extra: { logger?: ReturnType<typeof recordingLogger>; recoverEveryMs?: number } = {},
  ) => {
    const kept = await createRedisKeptOutcomes({
      url: REDIS_URL,
      prefix: pools.prefix,
      now,
      forgetEveryMs: 1,
      ...extra,
    });
    opened.push(kept);
    return kept;
  };
  const closeAll = async () => {
    for (const kept of opened.splice(0)) await kept.close();
  };

  describe('when a complete ends messages whose outcomes the pool keeps', () => {
    it('hands them to one replica once their time came, and to another only after that one’s lease', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, keptOutcome: keepAllButCompleted });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const ended = deadLetters(turn, clock.now());
      expect(await pool.complete(turn, ended)).toBe('settled');
      try {
        const first = await keptOn(clock.now);
        const second = await keptOn(clock.now);
        expect(await first.claimDue()).toEqual([]);
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await first.claimDue()).toEqual(ended);
        expect(await second.claimDue()).toEqual([]);
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await second.claimDue()).toEqual(ended);
      } finally {
        await closeAll();
      }
    });
  });

  describe('when the replica forgets what it recorded', () => {
    it('leaves nothing for any replica', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, keptOutcome: keepAllButCompleted });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const ended = deadLetters(turn, clock.now());
      await pool.complete(turn, ended);
      try {
        const settling = await keptOn(clock.now);
        for (const outcome of ended) settling.forget(outcome);
        await settling.close();
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await (await keptOn(clock.now)).claimDue()).toEqual([]);
      } finally {
        await closeAll();
      }
    });
  });

  describe('when a retry ends some messages of its turn', () => {
    it('keeps the outcomes of the final ones and puts the others back', async () => {
      const clock = manualClock();
      const pool = await pools.open({
        now: clock.now,
        keptOutcome: keepAllButCompleted,
        pipelines: [
          { id: 'p', aggregation: { enabled: true, delay: '1s', max_wait: '1s', max_messages: 5 } },
        ],
      });
      await pool.enqueue(queued('A', clock.now()));
      await pool.enqueue(queued('A', clock.now()));
      clock.advance(1000);
      const turn = (await pool.claim()) as Turn;
      expect(turn.messages).toHaveLength(2);
      const [final] = deadLetters(turn, clock.now());
      const finalId = turn.messages[0]?.message.id as string;
      expect(await pool.retry(turn, 0, [finalId], [final as Outcome])).toBe('settled');
      try {
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        const due = await (await keptOn(clock.now)).claimDue();
        expect(due.map(outcomeKeyOf)).toEqual([`m:${finalId}:dead_lettered`]);
        expect(await pool.stats()).toMatchObject({ pending: 1 });
      } finally {
        await closeAll();
      }
    });
  });

  describe('when a settlement ends only outcomes the pool does not keep', () => {
    it('keeps nothing', async () => {
      const clock = manualClock();
      const pool = await pools.open({ now: clock.now, keptOutcome: keepAllButCompleted });
      await pool.enqueue(queued('A', clock.now()));
      const turn = (await pool.claim()) as Turn;
      const completed = deadLetters(turn, clock.now()).map((outcome) => ({
        ...outcome,
        kind: 'completed' as const,
      }));
      await pool.complete(turn, completed);
      try {
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await (await keptOn(clock.now)).claimDue()).toEqual([]);
      } finally {
        await closeAll();
      }
    });
  });

  /** A client on the shared Redis for reading (and corrupting) the kept outcomes' keys. */
  const withRedis = async <T>(use: (redis: Redis) => Promise<T>): Promise<T> => {
    const redis = new Redis(REDIS_URL);
    try {
      return await use(redis);
    } finally {
      redis.disconnect();
    }
  };

  /** A pool that kept the dead letter of one message, and that outcome. */
  const keptDeadLetter = async (clock: ReturnType<typeof manualClock>) => {
    const pool = await pools.open({ now: clock.now, keptOutcome: keepAllButCompleted });
    await pool.enqueue(queued('A', clock.now()));
    const turn = (await pool.claim()) as Turn;
    const ended = deadLetters(turn, clock.now());
    await pool.complete(turn, ended);
    return ended[0] as Outcome;
  };

  describe('when a kept outcome is taken again and again and never forgotten (its records fail for good)', () => {
    it('gives it up after KEPT_OUTCOME_MAX_CLAIMS takes into the bounded dead list, with one ERROR naming its key', async () => {
      const clock = manualClock();
      const outcome = await keptDeadLetter(clock);
      const logger = recordingLogger();
      try {
        const kept = await keptOn(clock.now, { logger });
        for (let take = 1; take <= KEPT_OUTCOME_MAX_CLAIMS; take++) {
          clock.advance(KEPT_OUTCOME_LEASE_MS);
          expect(await kept.claimDue()).toEqual([outcome]);
        }
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await kept.claimDue()).toEqual([]);
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await kept.claimDue()).toEqual([]);
        const given = logger.lines.filter((line) => line.message.startsWith('kept outcome given up'));
        expect(given).toHaveLength(1);
        expect(given[0]).toMatchObject({ level: 'error', bindings: { key: outcomeKeyOf(outcome) } });
        const keys = keptOutcomeKeysOf(pools.prefix);
        await withRedis(async (redis) => {
          expect(await redis.hlen(keys.hash)).toBe(0);
          expect(await redis.zcard(keys.due)).toBe(0);
          const dead = (await redis.lrange(keys.dead, 0, -1)).map((entry) => JSON.parse(entry));
          expect(dead).toEqual([{ key: outcomeKeyOf(outcome), outcome: JSON.stringify(outcome) }]);
        });
      } finally {
        await closeAll();
      }
    });
  });

  describe('when a kept entry cannot be read', () => {
    it('drops it without waiting for another forget, logging its key and the cause but nothing it held', async () => {
      const clock = manualClock();
      const keys = keptOutcomeKeysOf(pools.prefix);
      await withRedis(async (redis) => {
        await redis.hset(keys.hash, 'm:broken:dead_lettered', '{"text": "my private words"');
        await redis.zadd(keys.due, clock.now(), 'm:broken:dead_lettered');
      });
      const logger = recordingLogger();
      try {
        const kept = await keptOn(clock.now, { logger });
        expect(await kept.claimDue()).toEqual([]);
        await eventually(() => withRedis(async (redis) => (await redis.hlen(keys.hash)) === 0), 5_000);
        const dead = logger.lines.filter((line) => line.message === 'dead kept outcome');
        expect(dead).toHaveLength(1);
        expect(dead[0]?.bindings).toMatchObject({ key: 'm:broken:dead_lettered', cause: 'SyntaxError' });
        expect(JSON.stringify(logger.lines)).not.toContain('my private words');
      } finally {
        await closeAll();
      }
    });
  });

  describe('when the replica cannot record an outcome it took (no writer for its records)', () => {
    it('leaves it kept, for another replica once its lease ends', async () => {
      const clock = manualClock();
      const outcome = await keptDeadLetter(clock);
      clock.advance(KEPT_OUTCOME_LEASE_MS);
      try {
        const refusing = await keptOn(clock.now, { recoverEveryMs: 10 });
        const offered: Outcome[] = [];
        refusing.start((taken) => {
          offered.push(taken);
          return false;
        });
        await eventually(() => offered.length > 0, 5_000);
        refusing.stopRecovering();
        clock.advance(KEPT_OUTCOME_LEASE_MS);
        expect(await (await keptOn(clock.now)).claimDue()).toEqual([outcome]);
      } finally {
        await closeAll();
      }
    });
  });

  describe('when recovery stopped (the replica shuts down)', () => {
    it('hands nothing more to record, while forgets still go out', async () => {
      const clock = manualClock();
      const outcome = await keptDeadLetter(clock);
      clock.advance(KEPT_OUTCOME_LEASE_MS);
      try {
        const stopping = await keptOn(clock.now, { recoverEveryMs: 10 });
        const recorded: Outcome[] = [];
        stopping.start((taken) => {
          recorded.push(taken);
          return true;
        });
        stopping.stopRecovering();
        // A replica still recovering on the same timing takes it: the stopped one, racing for it
        // too had it gone on, took nothing.
        const witness = await keptOn(clock.now, { recoverEveryMs: 10 });
        const witnessed: Outcome[] = [];
        witness.start((taken) => {
          witnessed.push(taken);
          return true;
        });
        await eventually(() => witnessed.length > 0, 5_000);
        expect(witnessed).toEqual([outcome]);
        expect(recorded).toEqual([]);
        stopping.forget(outcome);
        await eventually(
          () => withRedis(async (redis) => (await redis.hlen(keptOutcomeKeysOf(pools.prefix).hash)) === 0),
          5_000,
        );
      } finally {
        await closeAll();
      }
    });
  });
  describe('when it closes while its timer is forgetting more than one call takes', () => {
    /** Outcomes `first`… kept in Redis (as a settlement keeps them), to forget. */
    async function keptInRedis(first: number, count: number): Promise<Outcome[]> {
      const outcomes = Array.from({ length: count }, (_, offset) => ({
        kind: 'dead_lettered',
        at: first + offset,
        message: { ...queued(`S${first + offset}`, 0).message, id: `m${first + offset}` },
      })) as unknown as Outcome[];
      await withRedis((redis) =>
        redis.hset(
          keptOutcomeKeysOf(pools.prefix).hash,
          Object.fromEntries(outcomes.map((outcome) => [outcomeKeyOf(outcome), '{}'])),
        ),
      );
      return outcomes;
    }

    it.each([
      { flushes: [600], what: 'its first batch of 500 on its way' },
      // The second flush ends first (one batch): the first one's third batch is still to be sent.
      { flushes: [1100, 10], what: 'a second flush started while the first one sends its batches' },
    ])('lets every batch reach Redis before it closes its connection: $what', async ({ flushes }) => {
      const batches: Outcome[][] = [];
      for (const count of flushes)
        batches.push(
          await keptInRedis(
            batches.reduce((sum, batch) => sum + batch.length, 0),
            count,
          ),
        );
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const kept = await createRedisKeptOutcomes({
          url: REDIS_URL,
          prefix: pools.prefix,
          forgetEveryMs: 1000,
        });
        for (const batch of batches) {
          for (const outcome of batch) kept.forget(outcome);
          // The timer's flush starts; its first call is on its way when the next step begins.
          vi.advanceTimersByTime(1000);
        }
        await kept.close();
      } finally {
        vi.useRealTimers();
      }
      expect(await withRedis((redis) => redis.hlen(keptOutcomeKeysOf(pools.prefix).hash))).toBe(0);
    });
  });
});
