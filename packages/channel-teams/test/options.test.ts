import { secretValues } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { TeamsChannelSchema } from '../src/options.js';

const MINIMAL = { id: 'ms', type: 'teams', app_id: 'app-id-1', app_password: 'teams-password-1' };

describe('TeamsChannelSchema', () => {
  describe('when only the app id and password are given', () => {
    it("defaults to the Bot Framework's keys and the botframework.com tenant, paced, requiring a mention in groups", () => {
      expect(TeamsChannelSchema.parse(MINIMAL)).toMatchObject({
        id: 'ms',
        type: 'teams',
        appId: 'app-id-1',
        appPassword: 'teams-password-1',
        openIdMetadataUrl: 'https://login.botframework.com/v1/.well-known/openidconfiguration',
        tokenUrl: 'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
        policy: { admission: { require_mention: true }, sessionScope: 'chat' },
        outbound: {
          rate: {
            enabled: true,
            perBot: { limit: 50, perMs: 1_000, burst: 50 },
            perChat: { limit: 56, perMs: 30_000, burst: 4 },
          },
        },
      });
    });
  });

  describe('when the bot is single-tenant', () => {
    it("asks the tenant's endpoint for tokens, unless token_url says otherwise", () => {
      expect(TeamsChannelSchema.parse({ ...MINIMAL, tenant_id: 'contoso-tenant' }).tokenUrl).toBe(
        'https://login.microsoftonline.com/contoso-tenant/oauth2/v2.0/token',
      );
      const proxied = { ...MINIMAL, tenant_id: 'contoso-tenant', token_url: 'http://127.0.0.1:9/token' };
      expect(TeamsChannelSchema.parse(proxied).tokenUrl).toBe('http://127.0.0.1:9/token');
    });
  });

  describe('when the configuration is read for secrets', () => {
    it('marks the app password as a secret, and the app id not', () => {
      expect(secretValues(TeamsChannelSchema, MINIMAL)).toEqual(['teams-password-1']);
    });
  });

  describe('when a value is wrong', () => {
    it.each([
      ['a missing password', { app_password: undefined }, 'app_password'],
      ['an empty app id', { app_id: ' ' }, 'app_id'],
      ['a metadata URL that is not http(s)', { openid_metadata_url: 'file:///keys' }, 'openid_metadata_url'],
      ['an unknown key', { app_secret: 'x' }, 'app_secret'],
    ])('refuses %s, naming the key', (_case, change, key) => {
      const result = TeamsChannelSchema.safeParse({ ...MINIMAL, ...change });
      expect(result.success).toBe(false);
      expect(JSON.stringify(result.error?.issues)).toContain(key);
    });
  });
});
