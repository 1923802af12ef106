import {
  type InboundMessage,
  type Ingress,
  type IngressResult,
  parseInboundMessage,
  silentLogger,
} from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createAcceptQueue } from '../../src/inbound/accept-queue.js';

function message(text: string): InboundMessage {
  return parseInboundMessage({
    id: `01JABCDEFGHJKMNPQRSTVW${text.padStart(4, '0')}`,
    platform: 'discord',
    channel: 'dc',
    chat: { type: 'person', id: '900' },
    sender: { id: '42' },
    text,
    platform_message_id: text,
    received_at: 0,
  });
}

const queued: IngressResult = { status: 'queued', pipeline: 'echo', session: 's', rule: null };

/** An ingress that answers from `answers` in turn (then `afterwards`) and records what it saw. */
function scriptedIngress(
  answers: IngressResult[],
  options: { delayMs?: number; afterwards?: IngressResult } = {},
) {
  const seen: string[] = [];
  const ingress: Ingress = {
    async accept(accepted, deliveryId) {
      seen.push(`${accepted.text}@${deliveryId}`);
      await new Promise((resolve) => setTimeout(resolve, options.delayMs ?? 0));
      return answers.shift() ?? options.afterwards ?? queued;
    },
  };
  return { ingress, seen };
}

describe('createAcceptQueue', () => {
  describe('when accepts are slow', () => {
    it('hands messages over one at a time in arrival order', async () => {
      const { ingress, seen } = scriptedIngress([], { delayMs: 20 });
      const queue = createAcceptQueue(ingress, silentLogger);
      for (const text of ['1', '2', '3']) queue.push(message(text), `d${text}`);
      await queue.stop();
      expect(seen).toEqual(['1@d1', '2@d2', '3@d3']);
    });
  });

  describe('when the ingress refuses a message', () => {
    it('retries it after retryAfterMs before handing over the next one', async () => {
      const { ingress, seen } = scriptedIngress([
        { status: 'refused', reason: 'queue_full', retryAfterMs: 50 },
      ]);
      const queue = createAcceptQueue(ingress, silentLogger);
      const startedAt = Date.now();
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(seen).toEqual(['1@d1', '1@d1', '2@d2']);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(50);
      await queue.stop();
    });
  });

  describe('when the channel stops while a message is refused', () => {
    it('stops waiting, tries each message once more, and abandons those refused again', async () => {
      const refused: IngressResult = { status: 'refused', reason: 'draining', retryAfterMs: 60_000 };
      const { ingress, seen } = scriptedIngress([], { afterwards: refused });
      const warnings: object[] = [];
      const logger = {
        ...silentLogger,
        warn: (bindings: object) => warnings.push(bindings),
        child: () => logger,
      };
      const queue = createAcceptQueue(ingress, logger);
      queue.push(message('1'), 'd1');
      queue.push(message('2'), 'd2');
      await new Promise((resolve) => setTimeout(resolve, 20));
      const stoppedAt = Date.now();
      await queue.stop();
      expect(Date.now() - stoppedAt).toBeLessThan(1000);
      expect(seen).toEqual(['1@d1', '1@d1', '2@d2']);
      expect(warnings).toContainEqual({ abandoned: 2 });
    });
  });

  describe('when the ingress throws', () => {
    it('logs it and goes on with the next message', async () => {
      const seen: string[] = [];
      const ingress: Ingress = {
        async accept(accepted) {
          seen.push(accepted.text);
          if (accepted.text === '1') throw new Error('store down');
          return queued;
        },
      };
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
      expect(seen).toEqual(['1', '2']);
      expect(errors).toEqual(['message could not be accepted']);
    });
  });
});
