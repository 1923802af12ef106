import { randomUUID } from 'node:crypto';
import type { ClaimedDelivery } from '@switchboard/core';
import { capturingLogger, deliveryFixture, replyOutboxContract } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FAIL_FAST_OPTIONS,
  type PartitionedReplyOutboxOptions,
  createPartitionedReplyOutbox,
  type RedisReplyOutbox,
} from '../src/index.js';
import { partitionOf, partitionPrefixOf } from '../src/partitions.js';
import {
  REDIS_URL,
  manualClock,
  poolKeyNames,
  redisReachable,
  removePoolKeys,
  usePrivateRedis,
} from './redis-harness.js';

const reachable = await redisReachable();

const PARTITIONS = 3;
const CHANNEL = 'tg';

/** `count` chats of partition `index`. */
function chatsOf(index: number, count: number): string[] {
  const chats: string[] = [];
  for (let n = 0; chats.length < count; n++) {
    if (partitionOf(`chat-${n}`, PARTITIONS) === index) chats.push(`chat-${n}`);
  }
  return chats;
}

/**
 * Partitioned outboxes on one random prefix of the Redis at `url`, each another replica; `close`
 * closes them and removes their keys.
 */
function partitionedOutboxes(url = REDIS_URL) {
  const prefix = `sb-partitioned-${randomUUID()}`;
  const opened: RedisReplyOutbox[] = [];
  return {
    prefix,
    async open(options: Partial<PartitionedReplyOutboxOptions> = {}) {
      const outbox = await createPartitionedReplyOutbox({
        url,
        prefix,
        leaseMs: 60_000,
        partitions: PARTITIONS,
        ...options,
      });
      opened.push(outbox);
      return outbox;
    },
    async close() {
      for (const outbox of opened.splice(0)) await outbox.close();
      for (let index = 0; index < PARTITIONS; index++)
        await removePoolKeys(url, partitionPrefixOf(prefix, index));
    },
  };
}

/** Sends as a sender of one slot does: claims, then removes each and claims the next, until none is due. */
async function drain(outbox: RedisReplyOutbox, nowMs: number): Promise<ClaimedDelivery[]> {
  const sent: ClaimedDelivery[] = [];
  for (let claim = await outbox.claim(CHANNEL, nowMs); claim !== null; ) {
    sent.push(claim);
    ({ next: claim } = await outbox.endAndClaim(claim, nowMs));
  }
  return sent;
}

describe.skipIf(!reachable)('createPartitionedReplyOutbox', () => {
  replyOutboxContract(`redis, ${PARTITIONS} partitions`, async () => {
    const outboxes = partitionedOutboxes();
    return { store: await outboxes.open(), peer: outboxes.open, close: outboxes.close };
  });

  let outboxes = partitionedOutboxes();
  let outbox: RedisReplyOutbox;
  afterEach(async () => {
    await outboxes.close();
    outboxes = partitionedOutboxes();
  });

  /** One chat per partition, `perChat` deliveries each, added chat after chat in turns. */
  async function addToEveryPartition(perChat: number) {
    outbox = await outboxes.open();
    const chats = Array.from({ length: PARTITIONS }, (_, index) => chatsOf(index, 1)[0] as string);
    const added: Record<string, string[]> = {};
    for (let round = 0; round < perChat; round++) {
      for (const [at, chat] of chats.entries()) {
        const delivery = deliveryFixture(round * PARTITIONS + at, { chat });
        await outbox.add(delivery);
        added[chat] = [...(added[chat] ?? []), delivery.id];
      }
    }
    return { chats, added };
  }

  describe('when chats of several partitions have deliveries', () => {
    it("stores each chat's deliveries in its chat's partition, and counts and lists them all", async () => {
      const { chats, added } = await addToEveryPartition(2);
      const client = new Redis(REDIS_URL);
      try {
        for (const [index, chat] of chats.entries()) {
          const keys = await poolKeyNames(client, partitionPrefixOf(outboxes.prefix, index));
          const stored = keys
            .filter((key) => key.includes(':reply-outbox:d:'))
            .map((key) => key.split(':d:')[1]);
          expect(stored.sort()).toEqual([...(added[chat] as string[])].sort());
        }
      } finally {
        client.disconnect();
      }
      expect(await outbox.pending()).toEqual({ [CHANNEL]: 2 * PARTITIONS });
      expect((await outbox.list(CHANNEL)).map((delivery) => delivery.id)).toEqual(
        Array.from({ length: 2 * PARTITIONS }, (_, index) => deliveryFixture(index).id),
      );
    });

    it("sends each chat's deliveries in add order, taking the partitions in turn", async () => {
      const { added } = await addToEveryPartition(3);
      const woken: string[] = [];
      outbox.onDue((channel) => woken.push(channel));
      const sent = await drain(outbox, manualClock().now());
      // Each removal's next head was claimed by the drain itself, or said due by its claim.
      expect(woken).toEqual([]);
      const sentPerChat: Record<string, string[]> = {};
      for (const { delivery } of sent)
        sentPerChat[delivery.chat] = [...(sentPerChat[delivery.chat] ?? []), delivery.id];
      expect(sentPerChat).toEqual(added);
      // No partition waits for another's backlog: each round of sends visits every partition.
      const partitions = sent.map(({ delivery }) => partitionOf(delivery.chat, PARTITIONS));
      for (let round = 0; round < 3; round++)
        expect(new Set(partitions.slice(round * PARTITIONS, (round + 1) * PARTITIONS)).size).toBe(PARTITIONS);
    });

    it('says more is due until every partition with a due chat was asked', async () => {
      await addToEveryPartition(1);
      const nowMs = manualClock().now();
      const moreDue = [];
      for (
        let claim = await outbox.claim(CHANNEL, nowMs);
        claim !== null;
        claim = await outbox.claim(CHANNEL, nowMs)
      )
        moreDue.push(claim.moreDue);
      expect(moreDue).toEqual([true, true, false]);
    });
  });

  describe('when a partition answered that nothing was due', () => {
    it('asks it again once that answer is older than a second, while another partition has work', async () => {
      const clock = manualClock();
      outbox = await outboxes.open();
      const peer = await outboxes.open();
      const [busy, quiet] = [chatsOf(0, 1)[0] as string, chatsOf(1, 1)[0] as string];
      // Put back by another replica to be sent 100 ms later: a retry is not announced.
      const later = deliveryFixture(9, { chat: quiet });
      await peer.add(later);
      const error = { code: 'SB_CHANNEL_UNREACHABLE', message: 'down' };
      await peer.retry((await peer.claim(CHANNEL, clock.now())) as ClaimedDelivery, clock.now() + 100, error);
      expect(await outbox.claim(CHANNEL, clock.now())).toBeNull();
      for (let index = 0; index < 3; index++) await outbox.add(deliveryFixture(index, { chat: busy }));
      const first = (await outbox.claim(CHANNEL, clock.now())) as ClaimedDelivery;
      clock.advance(200);
      const { next: second } = await outbox.endAndClaim(first, clock.now());
      expect(second?.delivery.id).toBe(deliveryFixture(1).id);
      clock.advance(800);
      const { next: third } = await outbox.endAndClaim(second as ClaimedDelivery, clock.now());
      expect(third?.delivery.id).toBe(later.id);
    });
  });

  describe('when another partition fails as a removal claims next', () => {
    it('answers the removal it applied instead of failing it (its repeat would answer lost), leaving the claim to the next one', async () => {
      const clock = manualClock();
      const logged = capturingLogger();
      outbox = await outboxes.open({ logger: logged.logger });
      const [own, other] = [chatsOf(0, 1)[0] as string, chatsOf(2, 1)[0] as string];
      await outbox.add(deliveryFixture(1, { chat: own }));
      await outbox.add(deliveryFixture(2, { chat: other }));
      const held = (await outbox.claim(CHANNEL, clock.now())) as ClaimedDelivery;
      expect(held.delivery.chat).toBe(own);
      // Partitions 1 and 2 asked in turn: partition 0's turn again.
      expect((await outbox.claim(CHANNEL, clock.now()))?.delivery.chat).toBe(other);
      // Partition 1's claim script fails from now on (a key of another type where it reads its leases).
      const admin = new Redis(REDIS_URL);
      try {
        await admin.set(
          `{${partitionPrefixOf(outboxes.prefix, 1)}}:reply-outbox:leases:${CHANNEL}`,
          'broken',
        );
      } finally {
        admin.disconnect();
      }
      // The other partitions' answers are no longer trusted: they are asked after the removal.
      clock.advance(1000);
      expect(await outbox.endAndClaim(held, clock.now())).toEqual({ settlement: 'settled', next: null });
      // Partition 1 was asked, and failed.
      expect(logged.lines.filter((line) => line.includes('claim after a removal failed'))).toHaveLength(1);
    });
  });

  describe('when another replica adds to a partition', () => {
    it('hears it and claims it', async () => {
      outbox = await outboxes.open();
      const peer = await outboxes.open();
      const woken: string[] = [];
      outbox.onDue((channel) => woken.push(channel));
      const nowMs = manualClock().now();
      for (let index = 0; index < PARTITIONS; index++) {
        expect(await outbox.claim(CHANNEL, nowMs)).toBeNull();
        const delivery = deliveryFixture(index, { chat: chatsOf(index, 1)[0] as string });
        await peer.add(delivery);
        await expect.poll(() => woken.length).toBe(index + 1);
        expect(await outbox.claim(CHANNEL, nowMs)).toMatchObject({ delivery, moreDue: false });
      }
    });
  });

  describe('when the reply of a removal that claimed next in one script was lost', () => {
    // Paused: a Redis of this block's own.
    const redis = usePrivateRedis();
    let paused: ReturnType<typeof partitionedOutboxes>;
    afterEach(() => paused.close());

    /**
     * An outbox whose calls give up after 200 ms (so that a `CLIENT PAUSE` loses their replies),
     * two deliveries of one chat of partition 0 (plus `more`), the first claimed, then removed by
     * an `endAndClaim` whose reply was lost once Redis applied it, leasing the second.
     */
    async function removalWithLostReply(more: Array<ReturnType<typeof deliveryFixture>> = []) {
      paused = partitionedOutboxes(redis.url());
      const clock = manualClock();
      const outbox = await paused.open({
        url: undefined,
        createClient: () => new Redis(redis.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 }),
      });
      // Every partition answers that nothing is due: only partition 0 is heard of after.
      expect(await outbox.claim(CHANNEL, clock.now())).toBeNull();
      const chat = chatsOf(0, 1)[0] as string;
      // Remembered once ended, as the gateway's deliveries are: a repeated removal answers settled.
      const first = deliveryFixture(1, { chat, rememberForMs: 60_000 });
      const second = deliveryFixture(2, { chat, rememberForMs: 60_000 });
      for (const delivery of [first, second, ...more]) await outbox.add(delivery);
      const held = (await outbox.claim(CHANNEL, clock.now())) as ClaimedDelivery;
      expect(held.delivery.id).toBe(first.id);

      // No other partition may be due: the removal claims next in partition 0's own script.
      await redis.admin.client('PAUSE', 600, 'WRITE');
      await expect(outbox.endAndClaim(held, clock.now())).rejects.toMatchObject({
        code: 'SB_STORE_UNAVAILABLE',
      });
      // Once the pause ends, Redis runs the removal whose caller gave up: the second is leased.
      const nextKey = `{${paused.prefix}}:reply-outbox:d:${second.id}`;
      await eventually(
        async () => (await redis.admin.hget(nextKey, 'token')) !== null,
        5000,
        'the removal applied',
      );
      return { outbox, clock, held, second, nextKey };
    }

    it('answers its repeat with the delivery that removal claimed next, though the repeat would have removed, then claimed in turn', async () => {
      const { outbox, clock, held, second, nextKey } = await removalWithLostReply();
      // A second later the other partitions' answers are no longer trusted, and it is not
      // partition 0's turn: a first call would remove, then claim in turn.
      clock.advance(1000);
      const { settlement, next } = await outbox.endAndClaim(held, clock.now());
      expect(settlement).toBe('settled');
      expect(next?.delivery.id).toBe(second.id);
      expect(next?.token).toBe(await redis.admin.hget(nextKey, 'token'));
      expect(await outbox.delivered(next as ClaimedDelivery)).toBe('settled');
    });

    it('says more may be due after its repeat: the announcement of the lost call was its own, unheard', async () => {
      const third = deliveryFixture(3, { chat: chatsOf(0, 2)[1] as string, rememberForMs: 60_000 });
      const { outbox, clock, held, second } = await removalWithLostReply([third]);
      // The lost call left the other chat's head due, and announced it to this instance only.
      const { next } = await outbox.endAndClaim(held, clock.now());
      expect(next?.delivery.id).toBe(second.id);
      expect(next?.moreDue).toBe(true);
      expect((await outbox.claim(CHANNEL, clock.now()))?.delivery.id).toBe(third.id);
    });
  });
});
