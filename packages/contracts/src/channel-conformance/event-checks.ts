import type { EventType, InboundMessage } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { type ConformanceWorld, offeredWith, uniqueText } from './fixture.js';
import type { ChannelCapabilities, PlatformEvent } from './harness.js';

/** The message the ingress was offered for `original` (a message event), once it was. */
async function offeredOriginal(
  world: () => ConformanceWorld,
  original: PlatformEvent,
): Promise<InboundMessage> {
  const [message] = await eventually(
    () => {
      const found = offeredWith(world(), original.spec.text).filter((offered) => offered.event === undefined);
      return found.length > 0 && found;
    },
    5_000,
    'the original message offered',
  );
  if (message === undefined) throw new Error('no original message');
  return message;
}

/** The messages the ingress was offered reporting a `type` event of the message `messageId`. */
function offeredEvents(world: ConformanceWorld, type: EventType, messageId: string): InboundMessage[] {
  return world.ingress.accepted.filter(
    (message) => message.event?.type === type && message.event.message_id === messageId,
  );
}

/** Edits, deletions and reactions: offered as events of the message they concern, deduplicated as messages are. */
export function eventChecks(capabilities: ChannelCapabilities, world: () => ConformanceWorld): void {
  for (const type of capabilities.events) {
    const anEvent = `${type === 'edited' ? 'an' : 'a'} ${type} event`;
    /** Delivers a new message and then a `type` event of it; resolves with both as offered. */
    async function deliverBoth(): Promise<{ original: InboundMessage; event: PlatformEvent }> {
      const { harness } = world();
      if (harness.eventOf === undefined) throw new Error('a harness with events declares eventOf');
      const originalEvent = harness.event({ chat: 'direct', text: uniqueText(`to be ${type}`) });
      await harness.deliver(originalEvent, 'signed');
      const original = await offeredOriginal(world, originalEvent);
      const event = harness.eventOf(originalEvent, type, uniqueText('edited to'));
      const answer = await harness.deliver(event, 'signed');
      if (capabilities.acknowledgement === 'ack') expect(answer.acknowledged).toBe(true);
      return { original, event };
    }

    describe(`when a message is ${type === 'reaction' ? 'reacted to' : type}`, () => {
      it(`offers ${anEvent} naming the original's platform_message_id, under an id of its own`, async () => {
        const { original, event } = await deliverBoth();
        const [offered] = await eventually(
          () => {
            const found = offeredEvents(world(), type, original.platform_message_id);
            return found.length > 0 && found;
          },
          5_000,
          `the ${type} event offered`,
        );
        expect(offered?.event).toMatchObject({ type, message_id: original.platform_message_id });
        expect(offered?.platform_message_id).not.toBe(original.platform_message_id);
        expect(offered?.chat.id).toBe(original.chat.id);
        if (type === 'edited') expect(offered?.text).toContain(event.spec.text);
        // Both queued: the event is no duplicate of its message.
        await eventually(
          () => world().ingress.queued.length === 2,
          5_000,
          'the message and its event queued',
        );
        expect(world().ingress.queued).toEqual([original.platform_message_id, offered?.platform_message_id]);
      });
    });

    describe.skipIf(!capabilities.redelivery)(`when the platform delivers ${anEvent} again`, () => {
      it('queues it once: the redelivery is offered under the same delivery key, and acknowledged', async () => {
        const { harness, ingress } = world();
        const { original, event } = await deliverBoth();
        const again = await harness.deliver(event, 'redelivered');
        expect(again.acknowledged).toBe(true);
        const offered = offeredEvents(world(), type, original.platform_message_id);
        expect(offered.length).toBeGreaterThanOrEqual(1);
        expect(new Set(offered.map((message) => message.platform_message_id)).size).toBe(1);
        expect(
          ingress.queued.filter((id) => offered.some((message) => message.platform_message_id === id)),
        ).toHaveLength(1);
      });
    });
  }
}
