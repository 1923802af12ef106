import { parseConfig } from '@switchboard/config';
import { parseInboundMessage, silentLogger } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { createLiveRouting } from '../src/live-routing.js';

const CONFIG = `
channels: [ { id: api, type: openapi } ]
pipelines: [ { id: echo, type: echo } ]
routing: { default: echo }
tenants:
  - id: acme
    channels: [ { id: acme-api, type: openapi, prefix: /acme } ]
    pipelines: [ { id: acme-echo, type: echo } ]
    routing: { default: acme-echo }
`;

const message = (channel: string, tenant?: string) =>
  parseInboundMessage({
    id: 'm1',
    platform: 'openapi',
    channel,
    ...(tenant === undefined ? {} : { tenant }),
    chat: { type: 'person', id: 'c' },
    sender: { id: 'u' },
    text: 'hi',
    platform_message_id: 'p1',
    received_at: 0,
  });

describe('createLiveRouting', () => {
  const routing = createLiveRouting(parseConfig(CONFIG), { logger: silentLogger });

  describe('when a message carries no tenant', () => {
    it('is the default tenant’s: routed by the default routing whatever its channel is now', () => {
      expect(routing.router().route(message('api')).pipeline).toBe('echo');
      // A channel moved to `acme` by a reload does not take its earlier messages along.
      expect(routing.router().route(message('acme-api')).pipeline).toBe('echo');
      expect(routing.mayRun(message('acme-api'), 'echo')).toBe(true);
      expect(routing.tenantOf('acme-api')).toBe('acme');
      expect(routing.tenantOf('api')).toBeUndefined();
    });

    it('dry-runs a channel’s message by that channel’s tenant, as ingress stamps it', () => {
      const channelOf = (id: string) => {
        const found = parseConfig(CONFIG).channels.find((channel) => channel.id === id);
        if (found === undefined) throw new Error(`no channel ${id}`);
        return found;
      };
      const input = { chatType: 'person', chatId: 'c', text: 'hi', mention: false } as const;
      expect(routing.dryRun(channelOf('acme-api'), input).pipeline).toBe('acme-echo');
      expect(routing.dryRun(channelOf('api'), input).pipeline).toBe('echo');
    });
  });

  describe('when a message carries a tenant', () => {
    it('routes it by that tenant’s routing, and discards it when the tenant is gone', () => {
      expect(routing.router().route(message('api', 'acme')).pipeline).toBe('acme-echo');
      expect(() => routing.reroute(message('gone-api', 'gone'))).toThrow(/no longer configured/);
    });

    it('refuses to run it on another tenant’s pipeline', () => {
      expect(routing.mayRun(message('acme-api', 'acme'), 'acme-echo')).toBe(true);
      expect(routing.mayRun(message('acme-api', 'acme'), 'echo')).toBe(false);
      expect(routing.mayRun(message('api'), 'echo')).toBe(true);
    });
  });

  describe('when a reload removes a tenant', () => {
    it('keeps its channels’ last tenant, so what they still drain is discarded, not routed by default', () => {
      const live = createLiveRouting(parseConfig(CONFIG), { logger: silentLogger });
      live.apply(
        parseConfig('channels: [ { id: api, type: openapi } ]\npipelines: [ { id: echo, type: echo } ]\n'),
      );
      expect(live.tenantOf('acme-api')).toBe('acme');
      // Ingress stamps what the removed channel still drains with its last tenant.
      expect(live.router().route(message('acme-api', live.tenantOf('acme-api'))).pipeline).toBe(
        '__discard__',
      );
      expect(live.router().route(message('api')).pipeline).toBe('echo');
    });
  });

  describe('when tenants have quotas', () => {
    it('gives each tenant’s in force, and a reload’s from then on', () => {
      const live = createLiveRouting(parseConfig(CONFIG), { logger: silentLogger });
      expect(live.quotasOf('acme')).toBeUndefined();
      expect(live.quotasOf('default')).toBeUndefined();
      live.apply(
        parseConfig(
          `${CONFIG}    quotas: [ { scope: sender, limit: 3, per: 1m } ]\n    quota_reply: Later.\n` +
            'quotas: [ { scope: tenant, limit: 100, per: 1d } ]\n',
        ),
      );
      expect(live.quotasOf('acme')).toEqual({
        quotas: [{ scope: 'sender', limit: 3, perMs: 60_000 }],
        reply: 'Later.',
      });
      expect(live.quotasOf('default')).toEqual({
        quotas: [{ scope: 'tenant', limit: 100, perMs: 86_400_000 }],
        reply: undefined,
      });
      expect(live.quotasOf('gone')).toBeUndefined();
    });
  });
});
