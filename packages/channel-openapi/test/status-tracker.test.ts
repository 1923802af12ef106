import {
  type MessageStatusStore,
  type Outcome,
  type Turn,
  createMemoryMessageStatusStore,
  parseInboundMessage,
  silentLogger,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createStatusTracker } from '../src/status-tracker.js';

const message = parseInboundMessage({
  id: '01JSTATUS00000000000000001',
  platform: 'openapi',
  channel: 'api',
  chat: { type: 'person', id: 's1' },
  sender: { id: 'u1' },
  text: 'hello',
  platform_message_id: 'p1',
  received_at: 0,
});

describe('status tracker', () => {
  describe.each([
    { durable: true, expectedWrites: ['queued', 'completed'] },
    { durable: false, expectedWrites: ['completed'] },
  ])(
    'when a message goes from queued to running to completed (durable store: $durable)',
    ({ durable, expectedWrites }) => {
      it('answers every state, but writes the store only when queued (if durable) and when final', async () => {
        const store = { ...createMemoryMessageStatusStore(), durable };
        const writes: string[] = [];
        const counting: MessageStatusStore = {
          ...store,
          put: (status) => {
            writes.push(status.status);
            return store.put(status);
          },
        };
        let emitOutcome: (outcome: Outcome) => void = () => {};
        let emitTurnStart: (turn: Turn) => void = () => {};
        const tracker = createStatusTracker({
          channelId: 'api',
          statuses: counting,
          logger: silentLogger,
          events: {
            subscribeOutcomes: (listener) => {
              emitOutcome = listener;
              return () => {};
            },
            subscribeTurnStarts: (listener) => {
              emitTurnStart = listener;
              return () => {};
            },
          },
        });

        await tracker.queued(message.id, { pipeline: 'echo', rule: null });
        expect((await tracker.current(message.id))?.status).toBe('queued');
        const queued = {
          message,
          session: 's',
          pipeline: 'echo',
          routedByRule: false,
          attempt: 1,
          acceptedAt: 0,
        };
        emitTurnStart({ id: 't1', session: 's', pipeline: 'echo', messages: [queued], attempt: 1 });
        expect((await tracker.current(message.id))?.status).toBe('running');
        await tracker.appendReplies(message.id, [{ text: 'hello' }]);
        emitOutcome({
          kind: 'completed',
          at: 1,
          message,
          session: 's',
          pipeline: 'echo',
          turnId: 't1',
          replies: [{ text: 'hello' }],
        });
        const final = await tracker.current(message.id);
        expect(final).toMatchObject({ status: 'completed', turn: 't1', replies: [{ text: 'hello' }] });
        expect(writes).toEqual(expectedWrites);
        expect(await store.get(message.id)).toMatchObject({ status: 'completed' });
      });
    },
  );
});
