import { describe, expect, it } from 'vitest';
import { sendBeforeStoring } from '../../src/outbound/send-before-storing.js';
import type { Outcome } from '../../src/model/outcome.js';
import type { AddResult, Delivery, DeliveryClaim, ReplyOutbox } from '../../src/ports/reply-outbox.js';
import { message } from '../harness.js';

function deliveryOf(): Delivery {
  const origin = message('a', 'm1');
  return {
    id: 'd1',
    channel: 'api',
    chat: 'a',
    origin,
    messages: [{ message: origin, session: 'a', pipeline: 'p', attempt: 1 }],
    turnId: 'turn-1',
    replies: [{ text: 'r1' }],
    ownsOutcome: true,
    createdAt: 0,
    attempts: 0,
    notBefore: 0,
  };
}

/**
 * An outbox whose stored end succeeds or fails as told, recording its calls and whether each
 * outcome was recorded while its write was being issued (inside its unit).
 */
function outboxThat(write: 'commits' | 'fails') {
  const calls: string[] = [];
  let issuing = false;
  const outbox = {
    async add() {
      calls.push('add');
      return 'added' as AddResult;
    },
    addEnded(_claim: DeliveryClaim, alongside?: () => void) {
      calls.push('addEnded');
      issuing = true;
      alongside?.();
      issuing = false;
      return write === 'commits' ? Promise.resolve() : Promise.reject(new Error('disk full'));
    },
    unreserve() {
      calls.push('unreserve');
    },
  } as unknown as ReplyOutbox;
  const recorded: Array<{ outcome: Outcome; inUnit: boolean; committed?: Promise<boolean> }> = [];
  const outcomes = {
    record(outcome: Outcome, committed?: Promise<boolean>) {
      recorded.push({ outcome, inUnit: issuing, committed });
    },
  };
  return { outbox, outcomes, calls, recorded };
}

const silent = { warn() {}, error() {} } as never;
const completed = (delivery: Delivery) => () =>
  delivery.messages.map((answered) => ({ kind: 'completed', message: answered.message }) as Outcome);

describe('sendBeforeStoring', () => {
  describe('when the send and the write succeed', () => {
    it('stores the delivery ended with its outcome in one unit and tells the send it committed', async () => {
      const delivery = deliveryOf();
      const { outbox, outcomes, calls, recorded } = outboxThat('commits');
      let told: Promise<boolean> | undefined;
      let delivered = 0;
      const result = await sendBeforeStoring(
        { delivery, token: '1' },
        {
          outbox,
          outcomes,
          logger: silent,
          send: async (committed) => {
            told = committed;
            expect(calls).toEqual([]);
          },
          completed: completed(delivery),
          delivered: () => {
            delivered += 1;
          },
        },
      );
      expect(result).toBe('ended');
      expect(calls).toEqual(['addEnded']);
      expect(recorded.map(({ inUnit }) => inUnit)).toEqual([true]);
      expect(await told).toBe(true);
      expect(await recorded[0]?.committed).toBe(true);
      expect(delivered).toBe(1);
    });
  });

  describe('when the send fails', () => {
    it('gives the reservation back, adds the delivery to be sent again and records nothing', async () => {
      const delivery = deliveryOf();
      const { outbox, outcomes, calls, recorded } = outboxThat('commits');
      let told: Promise<boolean> | undefined;
      const result = await sendBeforeStoring(
        { delivery, token: '1' },
        {
          outbox,
          outcomes,
          logger: silent,
          send: async (committed) => {
            told = committed;
            throw new Error('deadline passed');
          },
          completed: completed(delivery),
          delivered: () => {},
        },
      );
      expect(result).toBe('added');
      expect(calls).toEqual(['unreserve', 'add']);
      expect(recorded).toEqual([]);
      expect(await told).toBe(false);
    });
  });

  describe('when the write storing it ended fails', () => {
    it('adds the delivery to be sent again, and the send and the outcome hear it did not commit', async () => {
      const delivery = deliveryOf();
      const { outbox, outcomes, calls, recorded } = outboxThat('fails');
      let told: Promise<boolean> | undefined;
      const result = await sendBeforeStoring(
        { delivery, token: '1' },
        {
          outbox,
          outcomes,
          logger: silent,
          send: async (committed) => {
            told = committed;
          },
          completed: completed(delivery),
          delivered: () => {},
        },
      );
      expect(result).toBe('added');
      expect(calls).toEqual(['addEnded', 'add']);
      expect(await told).toBe(false);
      expect(await recorded[0]?.committed).toBe(false);
    });
  });
});
