import type { DeliveryClaim } from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { describe, expect, it } from 'vitest';
import { manualClock, redisReachable, useReplyOutboxes } from './redis-harness.js';

const reachable = await redisReachable();

const CHANNEL = 'tg';

describe.skipIf(!reachable)('redis reply outbox with times or counts a script cannot store', () => {
  const outboxes = useReplyOutboxes();

  it('stores a time that is not a number as due at once, and the chat goes on', async () => {
    const clock = manualClock();
    const outbox = await outboxes.open();
    await outbox.add(deliveryFixture(1, { notBefore: Number.NaN }));
    await outbox.add(deliveryFixture(2));
    const claim = (await outbox.claim(CHANNEL, clock.now())) as DeliveryClaim;
    expect(claim.delivery.notBefore).toBe(0);
    const error = { code: 'SB_CHANNEL_SEND_FAILED', message: 'no' };
    expect(await outbox.retry(claim, Number.POSITIVE_INFINITY, error)).toBe('settled');
    expect((await outbox.list(CHANNEL))[0]?.notBefore).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses a delivery whose attempts are no whole number, storing nothing', async () => {
    const outbox = await outboxes.open();
    await expect(outbox.add(deliveryFixture(1, { attempts: 1.5 }))).rejects.toThrow(
      /attempts must be a whole number/,
    );
    expect(await outbox.pending()).toEqual({});
  });
});
