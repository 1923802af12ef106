import type { SlackChannelConfig } from '@switchboard/config';
import { type Ingress, silentLogger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSlackChannel } from '../src/index.js';

describe('slack channel in Socket Mode (in process)', () => {
  let fake: FakeSlack;
  beforeEach(async () => {
    fake = await startFakeSlack();
  });
  afterEach(() => fake.close());

  describe('when the WebSocket drops and the reconnect is held up', () => {
    it('reports not ready until the library has reconnected', async () => {
      const config: SlackChannelConfig = {
        id: 'sl',
        type: 'slack',
        botToken: 'xoxb-test',
        transport: { mode: 'socket_mode', appToken: 'xapp-test' },
        apiUrl: fake.apiUrl,
        botUserId: 'UBOT',
        policy: { admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' },
      };
      const channel = createSlackChannel({ config, server: Fastify(), logger: silentLogger });
      const ingress: Ingress = { accept: async () => ({ status: 'duplicate' }) };
      await channel.start({ ingress, logger: silentLogger });
      try {
        await eventually(() => channel.health().ready);

        // The next apps.connections.open answers 500: the reconnect fails once, then succeeds.
        fake.failNext(1, { kind: 'http_status', status: 500 });
        fake.dropSockets();
        await eventually(() => !channel.health().ready);
        expect(channel.health().detail).toMatch(/^socket mode (disconnected|reconnecting|connecting)$/);
        await eventually(() => channel.health().ready, 20_000);
        expect(fake.socketConnections()).toBe(1);
      } finally {
        await channel.stop();
      }
    });
  });
});
