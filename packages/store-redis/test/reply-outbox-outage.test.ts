import { type DeliveryClaim, isSwitchboardError } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FAIL_FAST_OPTIONS } from '../src/index.js';
import {
  REPLY_OUTBOX_LEASE_MS,
  manualClock,
  redisReachable,
  usePrivateRedis,
  useReplyOutboxes,
} from './redis-harness.js';

const reachable = await redisReachable();

const CHANNEL = 'tg';

describe.skipIf(!reachable)('the redis reply outbox while Redis is down', () => {
  // Stopped and paused: a Redis of this file's own.
  const redis = usePrivateRedis();
  const outboxes = useReplyOutboxes(redis.url);
  /** An outbox whose calls give up after 200 ms, so that a `CLIENT PAUSE` loses their replies. */
  const impatientOutbox = () =>
    outboxes.open({
      url: undefined,
      createClient: () => new Redis(redis.url(), { ...FAIL_FAST_OPTIONS, commandTimeout: 200 }),
    });
  /**
   * An impatient outbox holding the claim of delivery 1, whose id is remembered once it ended (as
   * the gateway's deliveries are: that record names the token), with delivery 2 behind it.
   */
  async function heldBeforeAnother(nowMs: number) {
    const outbox = await impatientOutbox();
    await outbox.add(deliveryFixture(1, { rememberForMs: 60_000 }));
    await outbox.add(deliveryFixture(2));
    return { outbox, held: (await outbox.claim(CHANNEL, nowMs)) as DeliveryClaim };
  }

  it('rejects calls at once with a retryable SB_STORE_UNAVAILABLE, then keeps what it stored, the claim included, and wakes the other replica again', async () => {
    const clock = manualClock();
    const first = await outboxes.open({ retryAfterMs: 2500 });
    const second = await outboxes.open();
    const woken: string[] = [];
    second.onDue((channel) => woken.push(channel));
    await first.add(deliveryFixture(1));
    await first.add(deliveryFixture(2));
    const held = (await first.claim(CHANNEL, clock.now())) as DeliveryClaim;
    await redis.server.stop();

    const startedAt = Date.now();
    const refusals = await Promise.all([
      first.add(deliveryFixture(3)).catch((err: unknown) => err),
      first.claim(CHANNEL, clock.now()).catch((err: unknown) => err),
      first.delivered(held).catch((err: unknown) => err),
      first.pending().catch((err: unknown) => err),
    ]);
    expect(Date.now() - startedAt).toBeLessThan(500);
    for (const refusal of refusals) {
      expect(isSwitchboardError(refusal, 'SB_STORE_UNAVAILABLE')).toBe(true);
      expect(refusal).toMatchObject({ retryable: true, retryAfterMs: 2500 });
    }

    await redis.server.start();
    await eventually(
      () =>
        first.add(deliveryFixture(3)).then(
          () => true,
          () => false,
        ),
      10_000,
      'an add stored after the restart',
    );
    // The settlement the outage refused is written again: the claim held meanwhile.
    expect(await first.delivered(held)).toBe('settled');
    expect((await first.list(CHANNEL)).map((delivery) => delivery.id)).toEqual(
      [2, 3].map((index) => deliveryFixture(index).id),
    );
    // Each try adds a delivery heading a chat of its own (only a new head is announced): one added
    // before the subscription is back goes unheard.
    let index = 4;
    await eventually(
      async () => {
        index += 1;
        await first.add(deliveryFixture(index, { channel: 'sl', chat: `chat-${index}` }));
        return woken.includes('sl');
      },
      10_000,
      'the other replica woken through its resubscribed connection',
    );
  });

  it('hands out the delivery of a claim whose reply was lost on the next claim, instead of holding its chat until the lease ends', async () => {
    const clock = manualClock();
    const outbox = await impatientOutbox();
    await outbox.add(deliveryFixture(1));
    await outbox.add(deliveryFixture(2, { chat: 'telegram:tg:person:7' }));
    const { admin } = redis;
    // CLIENT PAUSE holds every write of the Redis: only on one of the test's own.
    await admin.client('PAUSE', 600, 'WRITE');
    await expect(outbox.claim(CHANNEL, clock.now())).rejects.toMatchObject({
      code: 'SB_STORE_UNAVAILABLE',
    });
    // Once the pause ends, Redis runs the claim whose caller gave up.
    const deliveryKey = `{${outboxes.prefix}}:reply-outbox:d:${deliveryFixture(1).id}`;
    await eventually(
      async () => (await admin.hget(deliveryKey, 'token')) !== null,
      5000,
      'the claim applied',
    );
    const repeated = (await outbox.claim(CHANNEL, clock.now())) as DeliveryClaim;
    expect(repeated.delivery).toEqual(deliveryFixture(1));
    expect(await outbox.delivered(repeated)).toBe('settled');
    expect((await outbox.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(2).id);
  });

  it('leases the delivery of a repeated claim again from the repeat, so that no other replica reclaims it while it is sent', async () => {
    const clock = manualClock();
    const outbox = await impatientOutbox();
    const other = await outboxes.open();
    await outbox.add(deliveryFixture(1));
    const { admin } = redis;
    await admin.client('PAUSE', 600, 'WRITE');
    await expect(outbox.claim(CHANNEL, clock.now())).rejects.toMatchObject({
      code: 'SB_STORE_UNAVAILABLE',
    });
    const deliveryKey = `{${outboxes.prefix}}:reply-outbox:d:${deliveryFixture(1).id}`;
    await eventually(
      async () => (await admin.hget(deliveryKey, 'token')) !== null,
      5000,
      'the claim applied',
    );
    // Repeated just before the first claim's lease ends, as after an outage nearly as long.
    clock.advance(REPLY_OUTBOX_LEASE_MS - 1);
    const repeated = (await outbox.claim(CHANNEL, clock.now())) as DeliveryClaim;
    expect(repeated.delivery).toEqual(deliveryFixture(1));
    clock.advance(2);
    expect(await other.claim(CHANNEL, clock.now())).toBeNull();
    expect(await outbox.delivered(repeated)).toBe('settled');
  });

  it('hands out the delivery an add claimed but whose reply was lost on the next claim, instead of holding its chat until the lease ends', async () => {
    const clock = manualClock();
    const outbox = await impatientOutbox();
    const { admin } = redis;
    await admin.client('PAUSE', 600, 'WRITE');
    await expect(outbox.addAndClaim(deliveryFixture(1), clock.now())).rejects.toMatchObject({
      code: 'SB_STORE_UNAVAILABLE',
    });
    const deliveryKey = `{${outboxes.prefix}}:reply-outbox:d:${deliveryFixture(1).id}`;
    await eventually(async () => (await admin.hget(deliveryKey, 'token')) !== null, 5000, 'the add applied');
    const repeated = (await outbox.claim(CHANNEL, clock.now())) as DeliveryClaim;
    expect(repeated?.delivery.id).toBe(deliveryFixture(1).id);
    expect(repeated.token).toBe(await admin.hget(deliveryKey, 'token'));
    expect(await outbox.delivered(repeated)).toBe('settled');
  });

  it('answers settled to the repeat of a removal Redis applied but whose reply was lost, so its messages still get their outcome', async () => {
    const clock = manualClock();
    const { outbox, held } = await heldBeforeAnother(clock.now());
    const { admin } = redis;
    await admin.client('PAUSE', 600, 'WRITE');
    await expect(outbox.delivered(held)).rejects.toMatchObject({ code: 'SB_STORE_UNAVAILABLE' });
    // Once the pause ends, Redis runs the removal whose caller gave up.
    const deliveryKey = `{${outboxes.prefix}}:reply-outbox:d:${deliveryFixture(1).id}`;
    await eventually(async () => (await admin.exists(deliveryKey)) === 0, 5000, 'the removal applied');
    expect(await outbox.delivered(held)).toBe('settled');
    // Once answered, the token settles nothing more: a further settlement is lost, as any is.
    expect(await outbox.delivered(held)).toBe('lost');
    expect((await outbox.claim(CHANNEL, clock.now()))?.delivery.id).toBe(deliveryFixture(2).id);
  });

  it('answers the repeat of a removal that claimed next with the same next claim, so its chat is not held until the lease ends', async () => {
    const clock = manualClock();
    const { outbox, held } = await heldBeforeAnother(clock.now());
    const { admin } = redis;
    await admin.client('PAUSE', 600, 'WRITE');
    await expect(outbox.endAndClaim(held, clock.now())).rejects.toMatchObject({
      code: 'SB_STORE_UNAVAILABLE',
    });
    const nextKey = `{${outboxes.prefix}}:reply-outbox:d:${deliveryFixture(2).id}`;
    await eventually(async () => (await admin.hget(nextKey, 'token')) !== null, 5000, 'the removal applied');
    const { settlement, next } = await outbox.endAndClaim(held, clock.now());
    expect(settlement).toBe('settled');
    expect(next?.delivery).toEqual(deliveryFixture(2));
    expect(next?.token).toBe(await admin.hget(nextKey, 'token'));
    expect(await outbox.delivered(next as DeliveryClaim)).toBe('settled');
  });
});
