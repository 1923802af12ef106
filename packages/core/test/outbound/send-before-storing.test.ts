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
    async addReserved() {
      calls.push('addReserved');
      return 'added' as AddResult;
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

/**
 * Sends a delivery before storing it through `outboxThat(write)`, the send doing `send`; `unsent`:
 * the caller ends a delivery it could not send with outcomes of that kind instead of storing it.
 */
async function sentBeforeStoring(write: 'commits' | 'fails', send: 'succeeds' | 'fails', unsent?: 'dropped') {
  const delivery = deliveryOf();
  const { outbox, outcomes, calls, recorded } = outboxThat(write);
  let told: Promise<boolean> | undefined;
  let callsAtSend: string[] = [];
  let delivered = 0;
  const result = await sendBeforeStoring(
    { delivery, token: '1' },
    {
      outbox,
      outcomes,
      logger: silent,
      send: async (committed) => {
        told = committed;
        callsAtSend = [...calls];
        if (send === 'fails') throw new Error('deadline passed');
      },
      completed: () =>
        delivery.messages.map((answered) => ({ kind: 'completed', message: answered.message }) as Outcome),
      ...(unsent === undefined
        ? {}
        : {
            unsent: () =>
              delivery.messages.map((answered) => ({ kind: unsent, message: answered.message }) as Outcome),
          }),
      delivered: () => {
        delivered += 1;
      },
    },
  );
  return { result, calls, callsAtSend, recorded, told: await told, delivered };
}

describe('sendBeforeStoring', () => {
  describe('when the send and the write succeed', () => {
    it('stores the delivery ended with its outcome in one unit and tells the send it committed', async () => {
      const sent = await sentBeforeStoring('commits', 'succeeds');
      expect(sent.result).toBe('ended');
      expect(sent.callsAtSend).toEqual([]);
      expect(sent.calls).toEqual(['addEnded']);
      expect(sent.recorded.map(({ inUnit }) => inUnit)).toEqual([true]);
      expect(sent.told).toBe(true);
      expect(await sent.recorded[0]?.committed).toBe(true);
      expect(sent.delivered).toBe(1);
    });
  });

  describe('when the send fails', () => {
    it('stores the delivery in the place it was reserved at, to be sent again, and records nothing', async () => {
      const sent = await sentBeforeStoring('commits', 'fails');
      expect(sent.result).toBe('added');
      expect(sent.calls).toEqual(['addReserved']);
      expect(sent.recorded).toEqual([]);
      expect(sent.told).toBe(false);
      expect(sent.delivered).toBe(0);
    });

    it('ends it with the outcomes the caller gives for a delivery it cannot send, storing nothing to send again', async () => {
      const sent = await sentBeforeStoring('commits', 'fails', 'dropped');
      expect(sent.result).toBe('ended');
      expect(sent.calls).toEqual(['addEnded']);
      expect(sent.recorded.map(({ outcome, inUnit }) => [outcome.kind, inUnit])).toEqual([['dropped', true]]);
      expect(sent.told).toBe(false);
      expect(sent.delivered).toBe(0);
    });
  });

  describe('when the write storing it ended fails', () => {
    it('stores the delivery in the place it was reserved at, and the send and the outcome hear it did not commit', async () => {
      const sent = await sentBeforeStoring('fails', 'succeeds');
      expect(sent.result).toBe('added');
      expect(sent.calls).toEqual(['addEnded', 'addReserved']);
      expect(sent.told).toBe(false);
      expect(await sent.recorded[0]?.committed).toBe(false);
      expect(sent.delivered).toBe(0);
    });
  });
});
