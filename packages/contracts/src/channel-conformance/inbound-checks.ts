import { GroupPolicySchema, admit } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { type ConformanceWorld, offeredWith, uniqueText } from './fixture.js';
import type { ChannelCapabilities } from './harness.js';

/** The default group policy: answer in groups only when addressed. */
const REQUIRE_MENTION = GroupPolicySchema.parse({});

/** Signatures, redelivery, malformed bodies and mention gating: what comes in. */
export function inboundChecks(capabilities: ChannelCapabilities, world: () => ConformanceWorld): void {
  describe.skipIf(!capabilities.signedInbound)(
    'when an inbound request is not signed by the platform',
    () => {
      it('answers a forged signature 401 and hands nothing to the ingress', async () => {
        const { harness, ingress } = world();
        const answer = await harness.deliver(
          harness.event({ chat: 'direct', text: uniqueText('forged') }),
          'forged',
        );
        expect(answer.status).toBe(401);
        expect(ingress.accepted).toEqual([]);
      });

      it('answers a missing signature 401 and hands nothing to the ingress', async () => {
        const { harness, ingress } = world();
        const answer = await harness.deliver(
          harness.event({ chat: 'direct', text: uniqueText('unsigned') }),
          'unsigned',
        );
        expect(answer.status).toBe(401);
        expect(ingress.accepted).toEqual([]);
      });

      it('answers a forged signature on a body that is not JSON 401, checking it before parsing', async () => {
        const { harness, ingress } = world();
        const event = harness.event({ chat: 'direct', text: uniqueText('forged-malformed') });
        const answer = await harness.deliver(event, 'forged-malformed');
        expect(answer.status).toBe(401);
        expect(ingress.accepted).toEqual([]);
      });
    },
  );

  describe('when two different events arrive', () => {
    it('queues each of them: their redelivery keys differ', async () => {
      const { harness, ingress } = world();
      const texts = [uniqueText('first of two'), uniqueText('second of two')];
      for (const text of texts) {
        const answer = await harness.deliver(harness.event({ chat: 'direct', text }), 'signed');
        if (capabilities.acknowledgement === 'ack') expect(answer.acknowledged).toBe(true);
      }
      await eventually(() => ingress.queued.length === 2, 5_000, 'both events queued');
      expect(texts.map((text) => offeredWith(world(), text).length)).toEqual([1, 1]);
    });
  });

  describe.skipIf(!capabilities.redelivery)('when the platform delivers an event again', () => {
    it('queues one message for the two deliveries and acknowledges both', async () => {
      const { harness, ingress } = world();
      const text = uniqueText('redelivered');
      const event = harness.event({ chat: 'direct', text });
      const first = await harness.deliver(event, 'signed');
      const second = await harness.deliver(event, 'redelivered');
      expect([first.acknowledged, second.acknowledged]).toEqual([true, true]);
      const offered = offeredWith(world(), text);
      expect(offered.length).toBeGreaterThanOrEqual(1);
      expect(
        ingress.queued.filter((id) => offered.some((message) => message.platform_message_id === id)),
      ).toHaveLength(1);
    });
  });

  describe('when a signed event is malformed', () => {
    it('answers it without a 5xx, hands nothing to the ingress, and takes the next valid event', async () => {
      const { harness, ingress } = world();
      const malformed = await harness.deliver(
        harness.event({ chat: 'direct', text: uniqueText('malformed') }),
        'malformed',
      );
      if (malformed.status !== undefined) expect(malformed.status).toBeLessThan(500);
      else expect(malformed.acknowledged).toBe(true);
      expect(ingress.accepted).toEqual([]);
      const text = uniqueText('after malformed');
      const valid = await harness.deliver(harness.event({ chat: 'direct', text }), 'signed');
      if (capabilities.acknowledgement === 'ack') expect(valid.acknowledged).toBe(true);
      await eventually(() => ingress.queued.length === 1, 5_000, 'the valid event queued');
      expect(offeredWith(world(), text)).toHaveLength(1);
    });
  });

  describe.skipIf(!capabilities.groups)('when a message arrives in a group', () => {
    it('marks one without a mention as not addressed: admission ignores it as not_mentioned', async () => {
      const { harness } = world();
      const text = uniqueText('plain group talk');
      await harness.deliver(harness.event({ chat: 'group', mention: false, text }), 'signed');
      const [message] = await eventually(
        () => {
          const found = offeredWith(world(), text);
          return found.length > 0 && found;
        },
        5_000,
        'the group message offered',
      );
      expect(message?.chat.type).toBe('group');
      expect(message?.mentions_bot).toBe(false);
      expect(message && admit(message, REQUIRE_MENTION, false)).toEqual({
        admitted: false,
        reason: 'not_mentioned',
      });
    });

    it('marks one mentioning the bot as addressed: mentions_bot is true and admission admits it', async () => {
      const { harness } = world();
      const text = uniqueText('question for the bot');
      await harness.deliver(harness.event({ chat: 'group', mention: true, text }), 'signed');
      const [message] = await eventually(
        () => {
          const found = offeredWith(world(), text);
          return found.length > 0 && found;
        },
        5_000,
        'the group mention offered',
      );
      expect(message?.chat.type).toBe('group');
      expect(message?.mentions_bot).toBe(true);
      expect(message && admit(message, REQUIRE_MENTION, false)).toEqual({ admitted: true });
    });
  });
}
