import {
  type InboundMessage,
  type Ingress,
  type IngressDropReason,
  type IngressResult,
  SwitchboardError,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { inboundMessage } from '@switchboard/testkit/inbound-message';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAcceptQueue } from '../../src/inbound/accept-queue.js';

function message(text: string): InboundMessage {
  return inboundMessage({ platform: 'discord', channel: 'dc', text, platform_message_id: text });
}

const queued: IngressResult = { status: 'queued', pipeline: 'echo', session: 's', rule: null };

/** What a store out of reach throws from `accept` (Redis away, the audit outbox full). */
const storeUnavailable = () =>
  new SwitchboardError('SB_STORE_UNAVAILABLE', {
    message: 'redis is unreachable',
    retryable: true,
    retryAfterMs: 100,
  });

interface Drop {
  text: string;
  reason: IngressDropReason;
  error?: unknown;
}

/**
 * An ingress that records what it saw and what it was told to drop, and answers each accept with
 * `answer` (queued unless told otherwise).
 */
function recordingIngress(answer: (text: string) => Promise<IngressResult> = async () => queued) {
  const seen: string[] = [];
  const drops: Drop[] = [];
  const ingress: Ingress = {
    accept(accepted, deliveryId) {
      seen.push(`${accepted.text}@${deliveryId}`);
      return answer(accepted.text);
    },
    drop(dropped, reason, error) {
      drops.push({ text: dropped.text, reason, ...(error === undefined ? {} : { error }) });
    },
  };
  return { ingress, seen, drops };
}

describe('createAcceptQueue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('when accepts are slow', () => {
    it('hands messages over one at a time in arrival order', async () => {
      const releases: Array<() => void> = [];
      const { ingress, seen } = recordingIngress(
        () => new Promise((resolve) => releases.push(() => resolve(queued))),
      );
      const queue = createAcceptQueue(ingress, silentLogger);
      for (const text of ['1', '2', '3']) queue.push(message(text), `d${text}`);

      for (const expected of [['1@d1'], ['1@d1', '2@d2'], ['1@d1', '2@d2', '3@d3']]) {
        await eventually(() => seen.length === expected.length);
        // The next one is handed over only once this accept has resolved.
        expect(seen).toEqual(expected);
        releases.shift()?.();
      }
      await queue.stop();
      expect(seen).toHaveLength(3);
    });
  });

  describe('when the ingress refuses a message', () => {
    it('retries it after exactly retryAfterMs, and only then hands over the next one', async () => {
      vi.useFakeTimers();
      let refusals = 1;
      const { ingress, seen, drops } = recordingIngress(async () => {
        if (refusals === 0) return queued;
        refusals -= 1;
        return { status: 'refused', reason: 'queue_full', retryAfterMs: 50 };
      });
      const queue = createAcceptQueue(ingress, silentLogger);
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');

      await vi.advanceTimersByTimeAsync(49);
      expect(seen).toEqual(['1@d1']);
      await vi.advanceTimersByTimeAsync(1);
      expect(seen).toEqual(['1@d1', '1@d1', '2@d2']);
      await queue.stop();
      expect(drops).toEqual([]);
    });
  });

  describe('when maxWaiting messages are held while the ingress refuses', () => {
    it('records each further message dropped/refused at once, and holds new ones once there is room', async () => {
      vi.useFakeTimers();
      let refusing = true;
      const { ingress, seen, drops } = recordingIngress(async () =>
        refusing ? { status: 'refused', reason: 'queue_full', retryAfterMs: 1000 } : queued,
      );
      const queue = createAcceptQueue(ingress, silentLogger, { maxWaiting: 3 });
      for (const text of ['1', '2', '3', '4', '5']) queue.push(message(text), `d${text}`);
      expect(drops).toEqual([
        { text: '4', reason: 'refused' },
        { text: '5', reason: 'refused' },
      ]);
      await vi.advanceTimersByTimeAsync(0);
      expect(seen).toEqual(['1@d1']);

      refusing = false;
      await vi.advanceTimersByTimeAsync(1000);
      expect(seen).toEqual(['1@d1', '1@d1', '2@d2', '3@d3']);
      queue.push(message('6'), 'd6');
      await queue.stop();
      expect(seen.at(-1)).toBe('6@d6');
      expect(drops).toHaveLength(2);
    });
  });

  describe('when the channel stops while a message is refused', () => {
    it('stops waiting, tries each message once more, and records those refused again as dropped', async () => {
      vi.useFakeTimers();
      const { ingress, seen, drops } = recordingIngress(async () => ({
        status: 'refused',
        reason: 'draining',
        retryAfterMs: 60_000,
      }));
      const warnings: object[] = [];
      const logger = {
        ...silentLogger,
        warn: (bindings: object) => warnings.push(bindings),
        child: () => logger,
      };
      const queue = createAcceptQueue(ingress, logger);
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');
      await vi.advanceTimersByTimeAsync(0);
      expect(seen).toEqual(['1@d1']);

      // No timer is advanced from here on: stop must not wait for the 60 s retry.
      await queue.stop();
      expect(seen).toEqual(['1@d1', '1@d1', '2@d2']);
      expect(drops).toEqual([
        { text: '1', reason: 'refused' },
        { text: '2', reason: 'refused' },
      ]);
      expect(warnings).toContainEqual({ dropped: 2 });
    });
  });

  describe('when the channel stops with messages not yet handed over', () => {
    it('hands every one of them to the ingress before stop resolves', async () => {
      const releases: Array<() => void> = [];
      const { ingress, seen, drops } = recordingIngress(
        () => new Promise((resolve) => releases.push(() => resolve(queued))),
      );
      const queue = createAcceptQueue(ingress, silentLogger);
      for (const text of ['1', '2', '3']) queue.push(message(text), `d${text}`);
      let stopped = false;
      const stopping = queue.stop().then(() => {
        stopped = true;
      });

      for (let accepted = 1; accepted <= 3; accepted += 1) {
        await eventually(() => seen.length === accepted);
        expect(stopped).toBe(false);
        releases.shift()?.();
      }
      await stopping;
      expect(seen).toEqual(['1@d1', '2@d2', '3@d3']);
      expect(drops).toEqual([]);
    });
  });

  describe('when the store is unavailable for a while', () => {
    it('keeps the message and retries it with a growing wait, the next one behind it, and drops nothing', async () => {
      vi.useFakeTimers();
      let failures = 2;
      const { ingress, seen, drops } = recordingIngress(async () => {
        if (failures === 0) return queued;
        failures -= 1;
        throw storeUnavailable();
      });
      const queue = createAcceptQueue(ingress, silentLogger);
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');

      await vi.advanceTimersByTimeAsync(99);
      expect(seen).toEqual(['1@d1']);
      await vi.advanceTimersByTimeAsync(1);
      expect(seen).toEqual(['1@d1', '1@d1']);
      // The second wait doubles the store's retryAfterMs.
      await vi.advanceTimersByTimeAsync(199);
      expect(seen).toEqual(['1@d1', '1@d1']);
      await vi.advanceTimersByTimeAsync(1);
      expect(seen).toEqual(['1@d1', '1@d1', '1@d1', '2@d2']);
      await queue.stop();
      expect(drops).toEqual([]);
    });
  });

  describe('when the channel stops while the store is unavailable', () => {
    it('tries the waiting message once more, then records it and every one behind it dropped/ingress_failed with the error, untried', async () => {
      vi.useFakeTimers();
      const failure = storeUnavailable();
      const { ingress, seen, drops } = recordingIngress(async () => {
        throw failure;
      });
      const errors: object[] = [];
      const logger = {
        ...silentLogger,
        error: (bindings: object) => errors.push(bindings),
        child: () => logger,
      };
      const queue = createAcceptQueue(ingress, logger);
      for (const text of ['1', '2', '3']) queue.push(message(text), `d${text}`);
      await vi.advanceTimersByTimeAsync(0);
      expect(seen).toEqual(['1@d1']);

      // No timer is advanced from here on: stop must not wait for the backoff.
      await queue.stop();
      expect(seen).toEqual(['1@d1', '1@d1']);
      expect(drops).toEqual(
        ['1', '2', '3'].map((text) => ({ text, reason: 'ingress_failed', error: failure })),
      );
      expect(errors).toContainEqual({ err: failure, dropped: 3 });
    });
  });

  describe('when the ingress throws', () => {
    it('records the message as dropped/ingress_failed with the error and goes on with the next one', async () => {
      const failure = new Error('store down');
      const { ingress, seen, drops } = recordingIngress(async (text) => {
        if (text === '1') throw failure;
        return queued;
      });
      const errors: string[] = [];
      const logger = {
        ...silentLogger,
        error: (_: object, text: string) => errors.push(text),
        child: () => logger,
      };
      const queue = createAcceptQueue(ingress, logger);
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');
      await queue.stop();
      expect(seen).toEqual(['1@d1', '2@d2']);
      expect(drops).toEqual([{ text: '1', reason: 'ingress_failed', error: failure }]);
      expect(errors).toEqual(['message could not be accepted: dropped']);
    });
  });
});
