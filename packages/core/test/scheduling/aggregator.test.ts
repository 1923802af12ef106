import { describe, expect, it } from 'vitest';
import { type QueuedMessage, aggregate } from '../../src/index.js';
import { message } from '../harness.js';

const queued = (text: string, routedByRule: boolean, sender = 'alice'): QueuedMessage => ({
  message: message('G', text, { sender, chatType: 'group' }),
  session: 'test:c:group:G',
  pipeline: 'p',
  routedByRule,
  attempt: 1,
  acceptedAt: 0,
});

describe('aggregate', () => {
  describe('when a turn holds a burst', () => {
    it('joins texts with a newline, keeps the first message as context and ORs routedByRule', () => {
      const burst = [queued('a', false), queued('b', true, 'bob'), queued('c', false)];
      const query = aggregate({
        id: 't1',
        session: 'test:c:group:G',
        pipeline: 'p',
        messages: burst,
        attempt: 2,
      });
      expect(query.text).toBe('a\nb\nc');
      expect(query.message).toBe(burst[0]?.message);
      expect(query.message.sender.id).toBe('alice');
      expect(query.routedByRule).toBe(true);
      expect(query.messages.map((m) => m.text)).toEqual(['a', 'b', 'c']);
      expect(query).toMatchObject({ id: 't1', attempt: 2, pipeline: 'p' });
    });
  });

  describe('when no message was routed by a rule', () => {
    it('reports routedByRule false', () => {
      const query = aggregate({
        id: 't',
        session: 's',
        pipeline: 'p',
        messages: [queued('x', false)],
        attempt: 1,
      });
      expect(query.routedByRule).toBe(false);
      expect(query.text).toBe('x');
    });
  });

  describe('when the turn is empty', () => {
    it('throws instead of producing a query without context', () => {
      expect(() => aggregate({ id: 't', session: 's', pipeline: 'p', messages: [], attempt: 1 })).toThrow(
        /no messages/,
      );
    });
  });
});
