import { type KeptOutcome, type Outcome, type Turn, outcomeKeyOf } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  KEPT_OUTCOME_LEASE_MS,
  type RedisKeptOutcomes,
  createRedisKeptOutcomes,
  keptOutcomeKeysOf,
} from '../src/index.js';
import {
  REDIS_URL,
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

/** The dead-letter outcome of each message of `turn` at `at`. */
function deadLetters(turn: Turn, at: number): Outcome[] {
  return turn.messages.map((message) => ({
    kind: 'dead_lettered',
    reason: 'fatal_error',
    at,
    message: message.message,
    session: message.session,
    pipeline: message.pipeline,
    turnId: turn.id,
  }));
}

describe.skipIf(!reachable)('createRedisKeptOutcomes with the pool', () => {
  const pools = usePools();
  const opened: RedisKeptOutcomes[] = [];
  const keptOn = async (now: () => number) => {
    const kept = await createRedisKeptOutcomes({
      url: REDIS_URL,
      prefix: pools.prefix,
      now,
      forgetEveryMs: 1,
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

  describe('when a kept entry cannot be read', () => {
    it('drops it, logging its key but none of the text it holds', async () => {
      const clock = manualClock();
      await pools.open({ now: clock.now, keptOutcome: keepAllButCompleted });
      const keys = keptOutcomeKeysOf(pools.prefix);
      const redis = new Redis(REDIS_URL);
      try {
        await redis.hset(keys.hash, 'm:1:dead_lettered', '{"kind":"dead_lettered","text":"SECRET-user-text');
        await redis.zadd(keys.due, 0, 'm:1:dead_lettered');
      } finally {
        redis.disconnect();
      }
      const logger = recordingLogger();
      const kept = await createRedisKeptOutcomes({
        url: REDIS_URL,
        prefix: pools.prefix,
        now: clock.now,
        logger,
      });
      opened.push(kept);
      try {
        expect(await kept.claimDue()).toEqual([]);
        const dead = logger.lines.filter((line) => line.message === 'dead kept outcome');
        expect(dead).toHaveLength(1);
        expect(dead[0]?.bindings).toMatchObject({ key: 'm:1:dead_lettered', cause: 'SyntaxError' });
        expect(JSON.stringify(logger.lines)).not.toContain('SECRET-user-text');
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
});
