import { randomUUID } from 'node:crypto';
import type { Outcome, SessionReplies, TurnStart } from '@switchboard/core';
import { queuedMessageFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { sessionChannelOf } from '../src/event-relay.js';
import { type RedisEventRelay, createRedisEventRelay } from '../src/index.js';
import { REDIS_URL, recordingLogger, redisReachable, startPrivateRedis } from './redis-harness.js';

const reachable = await redisReachable();

function outcomeOf(sequence: number): Outcome {
  const { message } = queuedMessageFixture(sequence);
  return {
    kind: 'completed',
    at: Date.UTC(2025, 0, 1),
    message,
    session: `s-${sequence}`,
    pipeline: 'p',
    turnId: `turn-${sequence}`,
    replies: [{ text: `reply ${sequence}` }],
  };
}

const turnStart: TurnStart = {
  id: 'turn-1',
  pipeline: 'p',
  messages: [
    { message: { id: 'm-1', channel: 'http' }, rule: 'r' },
    { message: { id: 'm-2', channel: 'http' } },
  ],
};

describe.skipIf(!reachable)('createRedisEventRelay', () => {
  const opened: RedisEventRelay[] = [];
  afterEach(async () => {
    for (const relay of opened.splice(0)) await relay.close();
  });

  async function open(prefix: string, replicaId: string, url = REDIS_URL) {
    const logger = recordingLogger();
    const relay = await createRedisEventRelay({ url, prefix, replicaId, logger });
    opened.push(relay);
    const outcomes: Outcome[] = [];
    const turnStarts: TurnStart[] = [];
    relay.subscribeOutcomes((outcome) => outcomes.push(outcome));
    relay.subscribeTurnStarts((turn) => turnStarts.push(turn));
    return { relay, logger, outcomes, turnStarts };
  }

  describe('when two replicas share a prefix', () => {
    it("hands each one the other's outcomes and turn starts, never its own", async () => {
      const prefix = `sb-test-${randomUUID()}`;
      const a = await open(prefix, 'replica-a');
      const b = await open(prefix, 'replica-b');

      // Each event is published once the previous one arrived, so Redis delivers every echo
      // before the next event: a replica that got the next event has seen its own echo by then.
      a.relay.publishOutcome(outcomeOf(1));
      await eventually(() => b.outcomes.length === 1, 5000, 'b hears a');
      b.relay.publishOutcome(outcomeOf(2));
      await eventually(() => a.outcomes.length === 1, 5000, 'a hears b');
      // A whole turn: only its id, pipeline and each message's id, channel and rule cross.
      a.relay.publishTurnStart({ ...turnStart, session: 'not relayed', attempt: 1 } as TurnStart);
      await eventually(() => b.turnStarts.length === 1, 5000, 'b hears the turn start');

      expect(b.outcomes).toEqual([outcomeOf(1)]);
      expect(a.outcomes).toEqual([outcomeOf(2)]);
      expect(b.turnStarts).toEqual([turnStart]);
      expect(a.turnStarts).toEqual([]);
    });
  });

  describe('when replicas hold event streams on a session', () => {
    const repliesTo = (session: string, text: string): SessionReplies => ({
      channel: 'http',
      session,
      messageId: `m-${text}`,
      turn: 't-1',
      replies: [{ text }],
    });

    /** Subscribers of one session's channel, as Redis counts them. */
    async function followers(prefix: string, session: string): Promise<number> {
      const admin = new Redis(REDIS_URL);
      try {
        const [, count] = (await admin.pubsub('NUMSUB', sessionChannelOf(prefix, 'http', session))) as [
          string,
          number,
        ];
        return count;
      } finally {
        admin.disconnect();
      }
    }

    it('hands the replies sent to a session to the replicas following it, only while they follow', async () => {
      const prefix = `sb-test-${randomUUID()}`;
      const a = await open(prefix, 'replica-a');
      const b = await open(prefix, 'replica-b');
      const heardByA: SessionReplies[] = [];
      const heardByB: SessionReplies[] = [];
      const stopA = a.relay.followSession('http', 's-1', (replies) => heardByA.push(replies));
      a.relay.followSession('http', 's-3', (replies) => heardByA.push(replies));
      b.relay.followSession('http', 's-2', (replies) => heardByB.push(replies));
      for (const session of ['s-1', 's-2', 's-3'])
        await eventually(async () => (await followers(prefix, session)) === 1, 5000, `${session} followed`);

      b.relay.publishReplies(repliesTo('s-1', 'one'));
      a.relay.publishReplies(repliesTo('s-1', 'own echo'));
      await eventually(() => heardByA.length === 1, 5000, 'a hears the reply b sent to s-1');
      expect(heardByA).toEqual([repliesTo('s-1', 'one')]);
      expect(heardByB).toEqual([]);

      stopA();
      await eventually(async () => (await followers(prefix, 's-1')) === 0, 5000, 'a unsubscribed from s-1');
      // From one connection, in order: once a hears the second, it would have heard the first.
      b.relay.publishReplies(repliesTo('s-1', 'after'));
      b.relay.publishReplies(repliesTo('s-3', 'marker'));
      await eventually(() => heardByA.length === 2, 5000, 'a hears the reply b sent to s-3');
      expect(heardByA.map((replies) => replies.replies[0]?.text)).toEqual(['one', 'marker']);
    });
  });

  describe('when a session is followed while Redis is away', () => {
    it('subscribes to it once Redis is back, and hands over the replies sent from then on', {
      timeout: 30_000,
    }, async () => {
      const redis = await startPrivateRedis();
      try {
        const a = await open('away', 'replica-a', redis.url);
        await redis.stop();
        const heard: SessionReplies[] = [];
        a.relay.followSession('http', 's-1', (replies) => heard.push(replies));
        await redis.start();
        const b = await open('away', 'replica-b', redis.url);
        // Published until one arrives: the subscription is restored when the connection is ready.
        await eventually(
          () => {
            b.relay.publishReplies({
              channel: 'http',
              session: 's-1',
              messageId: 'm',
              turn: null,
              replies: [{ text: 'back' }],
            });
            return heard.length > 0;
          },
          15_000,
          'a hears the session after the reconnect',
        );
        expect(heard[0]?.replies).toEqual([{ text: 'back' }]);
      } finally {
        await redis.remove();
      }
    });
  });

  describe('when Redis is down', () => {
    it('logs a failed publish and throws nothing into the caller', { timeout: 30_000 }, async () => {
      const redis = await startPrivateRedis();
      try {
        const a = await open('outage', 'replica-a', redis.url);
        await redis.stop();
        expect(() => a.relay.publishOutcome(outcomeOf(5))).not.toThrow();
        await eventually(() =>
          a.logger.lines.some(
            (line) =>
              line.level === 'warn' &&
              line.message.startsWith('event relay failed') &&
              line.bindings.kind === 'outcome',
          ),
        );
      } finally {
        await redis.remove();
      }
    });
  });
});
