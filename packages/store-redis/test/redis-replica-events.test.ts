import { randomUUID } from 'node:crypto';
import type { Outcome, SessionReplies } from '@switchboard/core';
import { queuedMessageFixture, replicaEventsContract } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  type RedisReplicaEvents,
  createRedisReplicaEvents,
  eventChannelOf,
  sessionChannelOf,
} from '../src/index.js';
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

describe.skipIf(!reachable)('createRedisReplicaEvents', () => {
  // Pub/sub keeps no keys: the random prefix keeps the suite's channels apart from other runs'.
  replicaEventsContract('redis', async () => {
    const prefix = `sb-test-${randomUUID()}`;
    const opened: RedisReplicaEvents[] = [];
    const open = async () => {
      const events = await createRedisReplicaEvents({
        url: REDIS_URL,
        prefix,
        replicaId: `replica-${opened.length + 1}`,
        logger: recordingLogger(),
      });
      opened.push(events);
      return events;
    };
    return {
      store: await open(),
      peer: open,
      async close() {
        for (const events of opened) await events.close();
      },
    };
  });

  const opened: RedisReplicaEvents[] = [];
  afterEach(async () => {
    for (const events of opened.splice(0)) await events.close();
  });

  async function open(prefix: string, replicaId: string, url = REDIS_URL) {
    const logger = recordingLogger();
    const events = await createRedisReplicaEvents({ url, prefix, replicaId, logger });
    opened.push(events);
    return { events, logger };
  }

  describe('when a replica relays the events of its turns', () => {
    /** The PUBLISH commands the server ran since the last `CONFIG RESETSTAT`. */
    async function publishes(admin: Redis): Promise<number> {
      const stats = await admin.info('commandstats');
      return Number(/cmdstat_publish:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    }

    it('publishes each event once, to its addressee, and nothing for those addressed to itself', {
      timeout: 30_000,
    }, async () => {
      const redis = await startPrivateRedis();
      const admin = new Redis(redis.url);
      try {
        const a = await open('counted', 'replica-a', redis.url);
        const b = await open('counted', 'replica-b', redis.url);
        const heardByB: unknown[] = [];
        b.events.subscribeOutcomes((outcome) => heardByB.push(outcome));
        b.events.subscribeTurnStarts((turn) => heardByB.push(turn));
        const turn = { id: 'turn-1', pipeline: 'p', messages: [{ message: { id: 'm-1', channel: 'http' } }] };
        await admin.config('RESETSTAT');

        a.events.publishOutcome('replica-a', outcomeOf(1));
        a.events.publishTurnStart('replica-a', turn);
        // Sent after a's own on the same connection: once b heard it, they went out or never did.
        a.events.publishOutcome('replica-b', outcomeOf(2));
        await eventually(() => heardByB.length === 1, 5000, 'b hears the outcome addressed to it');
        expect(await publishes(admin)).toBe(1);

        a.events.publishTurnStart('replica-b', turn);
        await eventually(() => heardByB.length === 2, 5000, 'b hears the turn start addressed to it');
        expect(await publishes(admin)).toBe(2);
        expect(heardByB).toEqual([outcomeOf(2), turn]);
        const [, subscribed] = (await admin.pubsub('NUMSUB', eventChannelOf('counted', 'replica-b'))) as [
          string,
          number,
        ];
        expect(Number(subscribed)).toBe(1);
      } finally {
        admin.disconnect();
        await redis.remove();
      }
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
      const stopA = a.events.followSession('http', 's-1', (replies) => heardByA.push(replies));
      a.events.followSession('http', 's-3', (replies) => heardByA.push(replies));
      b.events.followSession('http', 's-2', (replies) => heardByB.push(replies));
      for (const session of ['s-1', 's-2', 's-3'])
        await eventually(async () => (await followers(prefix, session)) === 1, 5000, `${session} followed`);

      b.events.publishReplies(repliesTo('s-1', 'one'));
      a.events.publishReplies(repliesTo('s-1', 'own echo'));
      await eventually(() => heardByA.length === 1, 5000, 'a hears the reply b sent to s-1');
      expect(heardByA).toEqual([repliesTo('s-1', 'one')]);
      expect(heardByB).toEqual([]);

      stopA();
      await eventually(async () => (await followers(prefix, 's-1')) === 0, 5000, 'a unsubscribed from s-1');
      // From one connection, in order: once a hears the second, it would have heard the first.
      b.events.publishReplies(repliesTo('s-1', 'after'));
      b.events.publishReplies(repliesTo('s-3', 'marker'));
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
        a.events.followSession('http', 's-1', (replies) => heard.push(replies));
        await redis.start();
        const b = await open('away', 'replica-b', redis.url);
        // Published until one arrives: the subscription is restored when the connection is ready.
        await eventually(
          () => {
            b.events.publishReplies({
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

  describe('when a session is given up while Redis is away', () => {
    it('is unsubscribed once Redis is back, not restored with the subscriptions', {
      timeout: 30_000,
    }, async () => {
      const redis = await startPrivateRedis();
      try {
        const a = await open('gone', 'replica-a', redis.url);
        const topic = sessionChannelOf('gone', 'http', 's-1');
        const unfollow = a.events.followSession('http', 's-1', () => {});
        const probe = new Redis(redis.url);
        const subscribers = async () => {
          const [, count] = (await probe.pubsub('NUMSUB', topic)) as [string, number];
          return Number(count);
        };
        try {
          await eventually(async () => (await subscribers()) === 1, 10_000, 'a subscribed to the session');
          probe.disconnect();
          await redis.stop();
          unfollow();
          await redis.start();
          const after = new Redis(redis.url);
          try {
            // The replica's own event channel is back once it reconnected; by then its
            // subscriptions were restored and the session's given up again.
            await eventually(
              async () => {
                const [, events] = (await after.pubsub('NUMSUB', eventChannelOf('gone', 'replica-a'))) as [
                  string,
                  number,
                ];
                return Number(events) === 1;
              },
              15_000,
              'a reconnected',
            );
            await eventually(
              async () => {
                const [, count] = (await after.pubsub('NUMSUB', topic)) as [string, number];
                return Number(count) === 0;
              },
              5_000,
              'the session channel unsubscribed',
            );
            expect(
              a.logger.lines.some(
                (line) => line.message === 'session reply unsubscribe failed: undone once Redis is back',
              ),
            ).toBe(true);
          } finally {
            after.disconnect();
          }
        } finally {
          probe.disconnect();
        }
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
        expect(() => a.events.publishOutcome('replica-b', outcomeOf(5))).not.toThrow();
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
