import {
  type ChannelAdapter,
  type InboundMessage,
  type Ingress,
  type IngressResult,
  type Logger,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { type FakeSlack, eventEnvelope, messageEvent, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SlackChannelSchema } from '../src/options.js';
import { createSlackChannel } from '../src/index.js';
import { warningLogger } from './fixtures.js';

/** These tests are not about pacing: calls go out as fast as they come. */
const NO_PACING = { enabled: false, per_bot: null, per_chat: null, per_group: null };

const QUEUED: IngressResult = { status: 'queued', pipeline: 'echo', session: 's', rule: null };

/** An ingress that answers with `answers` in turn (then queued) and records what it got. */
function scriptedIngress(answers: Array<() => Promise<IngressResult>>) {
  const accepted: { message: InboundMessage; deliveryId: string | undefined }[] = [];
  const ingress: Ingress = {
    accept(message, deliveryId) {
      accepted.push({ message, deliveryId });
      return answers.shift()?.() ?? Promise.resolve(QUEUED);
    },
    drop() {
      // Slack redelivers an unacknowledged envelope: the channel never drops.
      throw new Error('unexpected drop');
    },
  };
  return { ingress, accepted };
}

describe('slack channel in Socket Mode (in process)', () => {
  let fake: FakeSlack;
  const started: ChannelAdapter[] = [];
  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((channel) => channel.stop()));
    await fake.close();
  });

  async function startChannel(ingress: Ingress, logger: Logger = silentLogger): Promise<ChannelAdapter> {
    const config = SlackChannelSchema.parse({
      id: 'sl',
      type: 'slack',
      bot_token: 'xoxb-test',
      app_token: 'xapp-test',
      api_url: fake.apiUrl,
      bot_user_id: 'UBOT',
      outbound: { concurrency: 8, rate: NO_PACING },
    });
    const channel = createSlackChannel({ config, server: Fastify(), logger });
    await channel.start({ ingress, logger });
    started.push(channel);
    await eventually(() => channel.health().ready);
    return channel;
  }

  describe('when the WebSocket drops and the reconnect is held up', () => {
    it('reports not ready until the library has reconnected', async () => {
      const channel = await startChannel(scriptedIngress([]).ingress);

      // The next apps.connections.open answers 500: the reconnect fails once, then succeeds.
      fake.failNext(1, { kind: 'http_status', status: 500 });
      fake.dropSockets();
      await eventually(() => !channel.health().ready);
      expect(channel.health().detail).toMatch(/^socket mode (disconnected|reconnecting|connecting)$/);
      await eventually(() => channel.health().ready, 20_000);
      expect(fake.socketConnections()).toBe(1);
    });
  });

  describe('when started again after a stop', () => {
    it('opens one socket again and hands its events to the ingress', async () => {
      const { ingress, accepted } = scriptedIngress([]);
      const channel = await startChannel(ingress);
      await channel.stop();
      await eventually(() => fake.socketConnections() === 0);
      expect(channel.health().ready).toBe(false);
      await channel.start({ ingress, logger: silentLogger });
      await eventually(() => channel.health().ready);
      expect(fake.socketConnections()).toBe(1);
      await fake.pushSocketEvent(eventEnvelope(messageEvent({ channel: 'D0OK', text: 'again' })));
      expect(accepted.map((entry) => entry.message.text)).toEqual(['again']);
    });
  });

  describe('when ingress journals the message', () => {
    it('acknowledges the envelope', async () => {
      const { ingress, accepted } = scriptedIngress([]);
      await startChannel(ingress);
      await fake.pushSocketEvent(eventEnvelope(messageEvent({ channel: 'D0OK', text: 'hello' })));
      expect(accepted.map((entry) => entry.message.text)).toEqual(['hello']);
    });
  });

  describe('when an event_callback holds an event Bolt cannot route', () => {
    it('acknowledges the envelope and logs it, instead of leaving it for a redelivery as unreadable', async () => {
      const { ingress, accepted } = scriptedIngress([]);
      const { logger, lines } = warningLogger();
      await startChannel(ingress, logger);
      // Bolt threw a TypeError on it: not SB_HTTP_BAD_REQUEST, so the envelope stayed unacked.
      const body = eventEnvelope(messageEvent({ channel: 'D0BAD', text: 'hello' }));
      const envelopeId = await fake.pushSocketEvent({
        ...body,
        event: { ...(body.event as object), user: null },
      });
      expect(fake.acknowledged(envelopeId)).toBe(true);
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: 'malformed slack event acknowledged', envelopeId }),
      );
      expect(accepted).toEqual([]);
    });
  });

  describe('when ingress refuses the message', () => {
    it('leaves the envelope unacknowledged, so that Slack redelivers it, and acknowledges the redelivery', async () => {
      const { ingress, accepted } = scriptedIngress([
        async () => ({ status: 'refused', reason: 'queue_full', retryAfterMs: 1_000 }),
      ]);
      const { logger, warnings } = warningLogger();
      await startChannel(ingress, logger);
      const body = eventEnvelope(messageEvent({ channel: 'D0FULL', text: 'wait for me' }));

      const first = fake.sendSocketEvent(body);
      // The line is written once the receiver has decided against the ack.
      await eventually(() => warnings.includes('slack event refused, left unacknowledged for redelivery'));
      expect(fake.acknowledged(first)).toBe(false);

      await fake.pushSocketEvent(body, { retryAttempt: 1 });
      // The same message again, under the same delivery id.
      expect(accepted).toHaveLength(2);
      expect(accepted[1]?.deliveryId).toBe(accepted[0]?.deliveryId);
    });
  });

  describe('when ingress fails to journal the message', () => {
    it('leaves the envelope unacknowledged, so that Slack redelivers it', async () => {
      const { ingress, accepted } = scriptedIngress([
        async () => {
          throw new Error('disk I/O error');
        },
      ]);
      const { logger, warnings } = warningLogger();
      await startChannel(ingress, logger);
      const body = eventEnvelope(messageEvent({ channel: 'D0DISK', text: 'keep me' }));

      const first = fake.sendSocketEvent(body);
      await eventually(() =>
        warnings.includes('slack event not accepted, left unacknowledged for redelivery'),
      );
      expect(fake.acknowledged(first)).toBe(false);
      await fake.pushSocketEvent(body, { retryAttempt: 1 });
      expect(accepted).toHaveLength(2);
    });
  });
});
