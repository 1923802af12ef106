import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { type ConformanceWorld, answerWithin, offeredWith, uniqueText } from './fixture.js';
import type { ChannelCapabilities } from './harness.js';

/** How long an acknowledgement that should not come is waited for after the ingress was offered the event. */
const NO_ACK_GRACE_MS = 300;

/** Acknowledging the platform only after the ingress took the message. */
export function acknowledgementChecks(
  capabilities: ChannelCapabilities,
  world: () => ConformanceWorld,
): void {
  describe.skipIf(capabilities.acknowledgement !== 'ack')('when the ingress does not take a message', () => {
    it('leaves an event the ingress refused (queue full) unacknowledged (429 or 503 with Retry-After), and queues it once redelivered', async () => {
      const { harness, ingress } = world();
      const text = uniqueText('ingress refuse');
      const event = harness.event({ chat: 'direct', text });
      ingress.answer('refuse');
      const refused = await harness.deliver(event, 'signed');
      expect(refused.acknowledged).toBe(false);
      if (refused.status !== undefined) {
        expect([429, 503]).toContain(refused.status);
        expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      }
      expect(ingress.queued).toEqual([]);
      ingress.answer('queue');
      const again = await harness.deliver(event, 'redelivered');
      expect(again.acknowledged).toBe(true);
      const offered = offeredWith(world(), text);
      expect(offered.length).toBeGreaterThanOrEqual(2);
      expect(ingress.queued).toEqual([offered[0]?.platform_message_id]);
    });

    it('leaves an event the ingress failed (store down) unacknowledged (503), and queues it once redelivered', async () => {
      const { harness, ingress } = world();
      const text = uniqueText('ingress fail');
      const event = harness.event({ chat: 'direct', text });
      ingress.answer('fail');
      const failed = await harness.deliver(event, 'signed');
      expect(failed.acknowledged).toBe(false);
      if (failed.status !== undefined) expect(failed.status).toBe(503);
      expect(ingress.queued).toEqual([]);
      ingress.answer('queue');
      const again = await harness.deliver(event, 'redelivered');
      expect(again.acknowledged).toBe(true);
      const offered = offeredWith(world(), text);
      expect(offered.length).toBeGreaterThanOrEqual(2);
      expect(ingress.queued).toEqual([offered[0]?.platform_message_id]);
    });

    it('holds the acknowledgement while the ingress holds the message, and acknowledges once it resolves', async () => {
      const { harness, ingress } = world();
      const text = uniqueText('held');
      ingress.answer('hold');
      const delivery = harness.deliver(harness.event({ chat: 'direct', text }), 'signed');
      await eventually(() => offeredWith(world(), text).length === 1, 5_000, 'the held event offered');
      expect(await answerWithin(delivery, NO_ACK_GRACE_MS)).toBe('pending');
      ingress.release();
      expect((await delivery).acknowledged).toBe(true);
      expect(ingress.queued).toHaveLength(1);
    });
  });

  describe.skipIf(capabilities.acknowledgement !== 'none')('when the platform never redelivers', () => {
    for (const mode of ['refuse', 'fail'] as const) {
      const what = mode === 'refuse' ? 'refused (queue full)' : 'failed (store down)';
      it(`offers a message the ingress ${what} again itself until it is queued`, async () => {
        const { harness, ingress } = world();
        const text = uniqueText(`ingress ${mode}`);
        ingress.answer(mode);
        await harness.deliver(harness.event({ chat: 'direct', text }), 'signed');
        await eventually(() => offeredWith(world(), text).length >= 2, 5_000, 'the message offered again');
        ingress.answer('queue');
        await eventually(() => ingress.queued.length === 1, 5_000, 'the message queued');
        expect(ingress.drops).toEqual([]);
      });
    }

    it('records a message still refused at stop as dropped (refused), never losing it silently', async () => {
      const { harness, ingress, adapter } = world();
      const text = uniqueText('refused at stop');
      ingress.answer('refuse');
      await harness.deliver(harness.event({ chat: 'direct', text }), 'signed');
      await eventually(() => offeredWith(world(), text).length >= 1, 5_000, 'the message offered');
      await adapter.stop();
      expect(ingress.drops.map((drop) => [drop.message.text, drop.reason])).toEqual([[text, 'refused']]);
    });
  });
}
