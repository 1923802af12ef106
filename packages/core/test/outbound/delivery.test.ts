import { describe, expect, it } from 'vitest';
import { createMemoryReplyOutbox, deliveryOf } from '../../src/index.js';
import { queuedMessage } from '../harness.js';

const queued = queuedMessage('a', 'hello');
const turn = { id: 'turn-1', session: queued.session };

describe('deliveryOf', () => {
  describe('when a turn runs again after its answer was stored (a crash before it completed)', () => {
    it.each([
      ['still waits in the outbox', false],
      ['was sent meanwhile', true],
    ])('adds a duplicate, not a second delivery, when the first %s', async (_, sent) => {
      const outbox = createMemoryReplyOutbox();
      const first = deliveryOf(turn, [queued], [{ text: 'the answer' }], { kind: 'answer', nowMs: 1 });
      expect(await outbox.add(first)).toBe('added');
      if (sent) {
        const claim = await outbox.claim(first.channel, Date.now());
        expect(claim?.delivery.id).toBe(turn.id);
        await outbox.delivered(claim as NonNullable<typeof claim>);
      }
      const again = deliveryOf(turn, [queued], [{ text: 'the answer, once more' }], {
        kind: 'answer',
        nowMs: 2,
      });
      expect(again.id).toBe(first.id);
      expect(await outbox.add(again)).toBe('duplicate');
      expect((await outbox.list(first.channel)).map((delivery) => delivery.replies)).toEqual(
        sent ? [] : [[{ text: 'the answer' }]],
      );
    });

    it('does the same for its dead-letter reply', async () => {
      const outbox = createMemoryReplyOutbox();
      const apology = () =>
        deliveryOf(turn, [queued], [{ text: 'sorry' }], { kind: 'dead_letter_reply', nowMs: 1 });
      await outbox.add(apology());
      const claim = await outbox.claim(apology().channel, Date.now());
      await outbox.delivered(claim as NonNullable<typeof claim>);
      expect(await outbox.add(apology())).toBe('duplicate');
    });
  });
});
