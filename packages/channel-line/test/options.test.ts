import { secretValues } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { LineChannelSchema } from '../src/options.js';

const MINIMAL = { id: 'ln', type: 'line', channel_secret: 'line-secret', channel_access_token: 'line-token' };

describe('LineChannelSchema', () => {
  describe('when only the credentials are given', () => {
    it('defaults to LINE without redelivery, requiring a mention in groups', () => {
      expect(LineChannelSchema.parse(MINIMAL)).toMatchObject({
        id: 'ln',
        type: 'line',
        channelSecret: 'line-secret',
        channelAccessToken: 'line-token',
        webhookRedelivery: false,
        apiUrl: 'https://api.line.me',
        policy: { admission: { require_mention: true }, sessionScope: 'chat' },
        outbound: { sendTimeoutMs: 30_000 },
      });
    });
  });

  describe('when the configuration is read for secrets', () => {
    it('marks the channel secret and the access token as secrets', () => {
      expect(secretValues(LineChannelSchema, MINIMAL).sort()).toEqual(['line-secret', 'line-token']);
    });
  });

  describe('when a value is wrong', () => {
    it.each([
      ['a missing secret', { channel_secret: undefined }, 'channel_secret'],
      ['a token with a newline', { channel_access_token: 'token\n' }, 'channel_access_token'],
      ['an api_url that is not http(s)', { api_url: 'ftp://api.line.me' }, 'api_url'],
      ['an unknown key', { channel_token: 'x' }, 'channel_token'],
    ])('refuses %s, naming the key', (_case, change, key) => {
      const result = LineChannelSchema.safeParse({ ...MINIMAL, ...change });
      expect(result.success).toBe(false);
      expect(JSON.stringify(result.error?.issues)).toContain(key);
    });
  });
});
