import { silentLogger } from '@switchboard/core';
import type { ChannelAdapter, Ingress, IngressResult, Logger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createFeishuChannel } from '../src/channel.js';
import { FeishuChannelSchema } from '../src/options.js';
import { type FeishuGateway, type FeishuGatewayOptions, startFeishuGateway } from './harness.js';

let gateway: FeishuGateway | undefined;
const extra: ChannelAdapter[] = [];
afterEach(async () => {
  for (const channel of extra.splice(0)) await channel.stop();
  await gateway?.stop();
  gateway = undefined;
});

const WEBSOCKET = { mode: 'websocket' };

async function start(options: FeishuGatewayOptions = {}): Promise<FeishuGateway> {
  gateway = await startFeishuGateway({ ...options, config: { ...WEBSOCKET, ...options.config } });
  return gateway;
}

/** Wraps the engine's ingress, keeping each result it gave; `refuse` refuses the first so many. */
function recording(refuse = 0) {
  const results: IngressResult['status'][] = [];
  let shared: Ingress | undefined;
  let refusals = refuse;
  return {
    results,
    ingress: () => shared as Ingress,
    wrapIngress: (inner: Ingress): Ingress => {
      shared = {
        async accept(message, deliveryId, acceptOptions) {
          const result: IngressResult =
            refusals-- > 0
              ? { status: 'refused', reason: 'queue_full', retryAfterMs: 1_000 }
              : await inner.accept(message, deliveryId, acceptOptions);
          results.push(result.status);
          return result;
        },
        drop: (message, reason, error) => inner.drop(message, reason, error),
      };
      return shared;
    },
  };
}

describe('feishu channel in websocket mode', () => {
  describe('when it starts', () => {
    it('opens the long connection with the app credentials and is ready only once connected', async () => {
      const { fake, channel, url } = await start({ started: false });
      expect(channel.health().ready).toBe(false);
      await channel.start({ ingress: recording().wrapIngress(neverIngress()), logger: silentLogger });
      await fake.longConnection.waitForConnections(1);
      await eventually(() => channel.health().ready, 5_000, 'channel ready');
      expect(fake.callsTo('ws_endpoint')[0]?.body).toEqual({ AppID: fake.appId, AppSecret: fake.appSecret });
      // No webhook route: nothing to sign, nothing public.
      expect((await fetch(`${url}/feishu/fs`, { method: 'POST', body: '{}' })).status).toBe(404);
    });

    it('reports the refusal of the endpoint in its health, and never connects', async () => {
      const { fake, channel } = await start({
        config: { app_secret: 'not-the-secret', bot_open_id: 'ou_bot0000' },
      });
      const health = await eventually(
        () => (channel.health().detail?.includes('failed') ? channel.health() : false),
        5_000,
        'long connection failed',
      );
      expect(health).toEqual({ ready: false, detail: expect.stringContaining('code=514') });
      expect(health.detail).not.toContain('not-the-secret');
      expect(fake.longConnection.connectionsOpened()).toBe(0);
    });
  });

  describe('when the endpoint refuses the app once', () => {
    it('starts the long connection again after the wait, connects and takes events', async () => {
      const { fake, channel } = await start({ started: false, restartAfterFailureMs: 200 });
      // "System busy" (code 1): the SDK gives up on it instead of retrying.
      fake.failNext('ws_endpoint', 1, { kind: 'code', code: 1 });
      const record = recording();
      await channel.start({ ingress: record.wrapIngress(neverIngress()), logger: silentLogger });
      await eventually(() => channel.health().ready, 10_000, 'connected after the restart');
      expect(fake.callsTo('ws_endpoint').map((call) => call.status)).toEqual([200, 200]);
      expect(fake.longConnection.connectionsOpened()).toBe(1);
    });
  });

  describe('when a user writes to the bot one to one', () => {
    it('answers with the reply API after acknowledging the event with code 200', async () => {
      const record = recording();
      const { fake } = await start({ wrapIngress: record.wrapIngress });
      const event = fake.messageEvent({ text: 'hello' });
      const delivery = await fake.longConnection.deliver(event);
      expect(delivery).toMatchObject({ code: 200, attempts: [{ code: 200 }] });
      // Acknowledged after the ingress took it.
      expect(record.results).toEqual(['queued']);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: hello']);
      expect(fake.callsTo('reply')[0]?.messageId).toBe(event.event.message.message_id);
    });

    it('acknowledges (code 200) a malformed event, and takes nothing', async () => {
      const record = recording();
      const { fake, outcomes } = await start({ wrapIngress: record.wrapIngress });
      const event = fake.messageEvent({ text: 'hello' });
      event.event.message.content = '{not json';
      expect(await fake.longConnection.deliver(event)).toMatchObject({ code: 200 });
      expect(record.results).toEqual([]);
      expect(outcomes).toHaveLength(0);
    });

    it('does not acknowledge the event before the ingress has taken it', async () => {
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const record = recording();
      const { fake } = await start({
        wrapIngress: (inner) =>
          record.wrapIngress({
            accept: async (...args) => {
              await held;
              return inner.accept(...args);
            },
            drop: inner.drop,
          }),
      });
      const event = fake.messageEvent({ text: 'held' });
      const unanswered = await fake.longConnection.deliver(event, { maxAttempts: 1, ackTimeoutMs: 300 });
      expect(unanswered.attempts).toEqual([{ connection: 1, code: null }]);
      release();
      expect((await fake.longConnection.deliver(event)).code).toBe(200);
      await eventually(() => record.results.length === 2, 5_000, 'both deliveries taken');
      expect(record.results).toEqual(['queued', 'duplicate']);
    });

    it('takes an event delivered twice (same event_id) once', async () => {
      const record = recording();
      const { fake } = await start({ wrapIngress: record.wrapIngress });
      const event = fake.messageEvent({ text: 'once' });
      expect((await fake.longConnection.deliver(event)).code).toBe(200);
      expect((await fake.longConnection.deliver(event)).code).toBe(200);
      expect(record.results).toEqual(['queued', 'duplicate']);
      await fake.waitForShown(event.event.message.chat_id, 1);
      expect(fake.callsTo('reply')).toHaveLength(1);
    });
  });

  describe('when the ingress refuses an event', () => {
    it('answers 500, so that Feishu delivers it again, and takes the redelivery once', async () => {
      const record = recording(1);
      const { fake } = await start({ wrapIngress: record.wrapIngress });
      const event = fake.messageEvent({ text: 'again' });
      const delivery = await fake.longConnection.deliver(event);
      expect(delivery.attempts.map((attempt) => attempt.code)).toEqual([500, 200]);
      expect(record.results).toEqual(['refused', 'queued']);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: again']);
    });
  });

  describe('when the ingress refuses many events', () => {
    it('logs the refusals once a minute with a count, not once per event', async () => {
      const warnings: Array<{ msg: string; suppressed?: unknown }> = [];
      const logger: Logger = {
        ...silentLogger,
        warn: (fields, msg) => {
          warnings.push({ msg, suppressed: (fields as { suppressed?: unknown }).suppressed });
        },
        child: () => logger,
      };
      const record = recording(3);
      const { fake } = await start({ wrapIngress: record.wrapIngress, logger });
      for (const text of ['one', 'two', 'three']) {
        const delivery = await fake.longConnection.deliver(fake.messageEvent({ text }), { maxAttempts: 1 });
        expect(delivery.attempts.map((attempt) => attempt.code)).toEqual([500]);
      }
      expect(warnings.filter((line) => line.msg.startsWith('feishu events refused'))).toEqual([
        { msg: 'feishu events refused, answered 500 for redelivery', suppressed: 0 },
      ]);
      expect(warnings.filter((line) => line.msg === 'feishu sdk')).toEqual([]);
    });
  });

  describe('when two replicas connect', () => {
    it('each gets some of the events, and each event is taken once across both', async () => {
      const record = recording();
      const { fake } = await start({ wrapIngress: record.wrapIngress });
      const config = FeishuChannelSchema.parse({
        id: 'fs',
        type: 'feishu',
        mode: 'websocket',
        app_id: fake.appId,
        app_secret: fake.appSecret,
        domain: fake.url,
      });
      const replica = createFeishuChannel({ config, server: Fastify(), logger: silentLogger });
      extra.push(replica);
      await replica.start({ ingress: record.ingress(), logger: silentLogger });
      await fake.longConnection.waitForConnections(2);

      const events = [1, 2, 3, 4].map((n) => fake.messageEvent({ text: `m${n}`, senderOpenId: `ou_u${n}` }));
      for (const event of events) expect((await fake.longConnection.deliver(event)).code).toBe(200);
      const served = new Set(
        fake.longConnection.deliveries.map((delivery) => delivery.attempts[0]?.connection),
      );
      expect(served).toEqual(new Set([1, 2]));
      // Feishu redelivers the first event, to the other replica this time.
      expect((await fake.longConnection.deliver(events[0] as Record<string, unknown>)).code).toBe(200);
      expect(record.results).toEqual(['queued', 'queued', 'queued', 'queued', 'duplicate']);
      for (const event of events) await fake.waitForShown(event.event.message.chat_id, 1);
      expect(fake.callsTo('reply')).toHaveLength(4);
    });
  });

  describe('when Feishu drops the connection', () => {
    it('connects again and takes the next event', async () => {
      const { fake, channel } = await start();
      await fake.longConnection.waitForConnections(1);
      fake.longConnection.dropConnections();
      await eventually(() => fake.longConnection.connectionsOpened() === 2, 5_000, 'a second connection');
      await eventually(() => channel.health().ready, 5_000, 'channel ready again');
      const event = fake.messageEvent({ text: 'after' });
      expect((await fake.longConnection.deliver(event)).code).toBe(200);
      expect(await fake.waitForShown(event.event.message.chat_id, 1)).toEqual(['echo: after']);
    });
  });

  describe('when the connection goes silent without closing', () => {
    it('takes it for dead once a ping goes unanswered, connects again and takes the next event', async () => {
      // Each ping starts the SDK's wait anew: it must end before the next ping.
      const { fake, channel } = await start({
        fake: { longConnection: { PingInterval: 0.5 } },
        pingTimeoutMs: 200,
      });
      await fake.longConnection.waitForConnections(1);
      fake.longConnection.silence(true);
      await eventually(() => fake.longConnection.connectionsOpened() === 2, 5_000, 'a second connection');
      await eventually(() => channel.health().ready, 5_000, 'channel ready again');
      const event = fake.messageEvent({ text: 'revived' });
      expect((await fake.longConnection.deliver(event)).attempts).toEqual([{ connection: 2, code: 200 }]);
    });
  });

  describe('when it stops', () => {
    it('closes the connection and is no longer ready', async () => {
      const { fake, channel } = await start();
      await eventually(() => channel.health().ready, 5_000, 'channel ready');
      await channel.stop();
      expect(channel.health().ready).toBe(false);
      await eventually(() => fake.longConnection.connections() === 0, 5_000, 'connection closed');
    });
  });
});

/** An ingress for a test that delivers nothing. */
function neverIngress(): Ingress {
  return {
    accept: async () => {
      throw new Error('no event expected');
    },
    drop: () => {},
  };
}
