import type { DeliveryClaim } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisReplyOutbox } from '../src/index.js';
import { replyOutboxKeysOf } from '../src/reply-outbox-keys.js';
import {
  REDIS_URL,
  REPLY_OUTBOX_LEASE_MS,
  manualClock,
  recordingLogger,
  redisReachable,
  useReplyOutboxes,
} from './redis-harness.js';

const reachable = await redisReachable();

const CHANNEL = 'tg';

/** Appends `id` to the list of `chat`. */
function append(lists: Record<string, string[]>, chat: string, id: string): void {
  lists[chat] = [...(lists[chat] ?? []), id];
}

const idsOf = async (outbox: RedisReplyOutbox) => (await outbox.list(CHANNEL)).map((delivery) => delivery.id);

describe.skipIf(!reachable)('redis reply outbox across replicas', () => {
  const outboxes = useReplyOutboxes();

  describe('when two replicas send the same channel at once', () => {
    it('never hold the same chat at once, and each chat leaves in add order, every delivery once', async () => {
      const clock = manualClock();
      const replicas = [await outboxes.open(), await outboxes.open()];
      const added: Record<string, string[]> = {};
      for (let index = 0; index < 48; index++) {
        const chat = `chat-${index % 6}`;
        const delivery = deliveryFixture(index, { chat });
        await replicas[index % 2]?.add(delivery);
        append(added, chat, delivery.id);
      }
      const holder = new Map<string, string>();
      const overlaps: string[] = [];
      const sent: Record<string, string[]> = {};
      const claimsBy = [0, 0];

      // Three senders per replica: claim, "send", settle, until the channel is empty.
      async function sender(replica: number): Promise<void> {
        const outbox = replicas[replica] as RedisReplyOutbox;
        for (;;) {
          const claim = await outbox.claim(CHANNEL, clock.now());
          if (claim === null) {
            if ((await outbox.pending())[CHANNEL] === undefined) return;
            continue;
          }
          claimsBy[replica] = (claimsBy[replica] ?? 0) + 1;
          const { chat, id } = claim.delivery;
          if (holder.has(chat)) overlaps.push(`${chat}: ${holder.get(chat)} and ${id}`);
          holder.set(chat, id);
          append(sent, chat, id);
          // The send: a round trip to Redis, during which every other sender claims on.
          await outbox.pending();
          // Freed before the settlement call: the other replica may claim the next one only once it is applied.
          holder.delete(chat);
          expect(await outbox.delivered(claim)).toBe('settled');
        }
      }
      await Promise.all([0, 0, 0, 1, 1, 1].map(sender));

      expect(overlaps).toEqual([]);
      expect(sent).toEqual(added);
      expect(claimsBy.every((count) => count > 0)).toBe(true);
      expect(await replicas[0]?.pending()).toEqual({});
    });
  });

  describe("when a replica's lease expires", () => {
    it('lets the other replica claim the delivery, and answers lost to the first one late settlement', async () => {
      const clock = manualClock();
      const logger = recordingLogger();
      const first = await outboxes.open();
      const second = await outboxes.open({ logger });
      await first.add(deliveryFixture(1));
      await first.add(deliveryFixture(2));
      const stale = (await first.claim(CHANNEL, clock.now())) as DeliveryClaim;

      clock.advance(REPLY_OUTBOX_LEASE_MS - 1);
      expect(await second.claim(CHANNEL, clock.now())).toBeNull();
      clock.advance(1);
      const taken = (await second.claim(CHANNEL, clock.now())) as DeliveryClaim;
      expect(taken.delivery).toEqual(deliveryFixture(1));
      expect(taken.token).not.toBe(stale.token);
      expect(logger.lines).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          bindings: expect.objectContaining({
            deliveryId: deliveryFixture(1).id,
            reclaimedBy: second.replicaId,
          }),
        }),
      );

      expect(await first.delivered(stale)).toBe('lost');
      expect(await first.retry(stale, 0, { code: 'X', message: 'x' })).toBe('lost');
      expect(await idsOf(first)).toEqual([deliveryFixture(1).id, deliveryFixture(2).id]);
      expect(await second.delivered(taken)).toBe('settled');
      expect((await first.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(2).id);
    });
  });

  describe('when a replica stops with deliveries stored', () => {
    it('leaves them, their order, backoff and attempts to a later replica, and its claim once the lease ends', async () => {
      const clock = manualClock();
      const first = await outboxes.open();
      await first.add(deliveryFixture(1));
      await first.add(deliveryFixture(2));
      await first.add(deliveryFixture(3, { chat: 'telegram:tg:person:7' }));
      const error = { code: 'SB_CHANNEL_SEND_TIMEOUT', message: 'slow' };
      await first.retry((await first.claim(CHANNEL, clock.now())) as DeliveryClaim, clock.now() + 500, error);
      // Claimed and never settled: the replica dies sending it.
      expect((await first.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(3).id);
      await outboxes.close(first);

      const later = await outboxes.open();
      expect((await later.list(CHANNEL)).map((delivery) => delivery.attempts)).toEqual([1, 0, 0]);
      expect(await later.pending()).toEqual({ [CHANNEL]: 3 });
      expect(await later.claim(CHANNEL, clock.now())).toBeNull();
      clock.advance(500);
      const head = (await later.claim(CHANNEL, clock.now())) as DeliveryClaim;
      expect(head.delivery).toEqual({
        ...deliveryFixture(1),
        attempts: 1,
        notBefore: clock.now(),
        lastError: error,
      });
      await later.delivered(head);
      expect((await later.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(2).id);
      expect(await later.claim(CHANNEL, clock.now())).toBeNull();
      // The dead replica's lease was taken at the start, 500 ms before the one on delivery 2.
      clock.advance(REPLY_OUTBOX_LEASE_MS - 500);
      expect((await later.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(3).id);
      expect(await later.claim(CHANNEL, clock.now())).toBeNull();
    });
  });

  describe('when a replica adds or frees a chat', () => {
    let publisher: Redis;
    beforeAll(() => {
      publisher = new Redis(REDIS_URL);
    });
    afterAll(() => {
      publisher?.disconnect();
    });

    it('wakes the other replica with the channel when a chat gets a head, and not itself a second time', async () => {
      const clock = manualClock();
      const first = await outboxes.open();
      const second = await outboxes.open();
      const wokenFirst: string[] = [];
      const wokenSecond: string[] = [];
      first.onDue((channel) => wokenFirst.push(channel));
      second.onDue((channel) => wokenSecond.push(channel));

      // Both of one chat: the second, behind the first, is left to the first's removal.
      await first.add(deliveryFixture(1, { channel: 'sl' }));
      await first.add(deliveryFixture(2, { channel: 'sl' }));
      await eventually(() => wokenSecond.length === 1, 5000, 'the other replica woken by the new head');
      const claim = (await first.claim('sl', clock.now())) as DeliveryClaim;
      await first.delivered(claim);
      await eventually(() => wokenSecond.length === 2, 5000, 'the other replica woken by the freed chat');
      expect(wokenSecond).toEqual(['sl', 'sl']);

      // A marker published after the echoes arrives after them: once it is seen, none was taken.
      await publisher.publish(
        replyOutboxKeysOf(outboxes.prefix).dueChannel,
        JSON.stringify(['marker', 'mk']),
      );
      await eventually(() => wokenFirst.includes('mk'), 5000, 'the marker delivered');
      expect(wokenFirst).toEqual(['sl', 'sl', 'mk']);
    });
  });
});
