import { webApi } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { toChannelError } from '../src/errors.js';

const TOKEN = 'xoxb-1234-5678-secret-token';
const call = { channelId: 'sl', method: 'chat.postMessage', token: TOKEN };

function platformError(error: string) {
  return new webApi.WebAPIPlatformError({ ok: false, error });
}

describe('toChannelError', () => {
  describe('when Slack answers 429', () => {
    it('is SB_CHANNEL_RATE_LIMITED with its Retry-After in ms', () => {
      expect(toChannelError(new webApi.WebAPIRateLimitedError(12), call)).toMatchObject({
        code: 'SB_CHANNEL_RATE_LIMITED',
        retryable: true,
        retryAfterMs: 12_000,
      });
    });
  });

  describe('when Slack answers ok: false with a token problem', () => {
    it('is SB_CHANNEL_AUTH_FAILED naming bot_token', () => {
      const error = toChannelError(platformError('missing_scope'), call);
      expect(error.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(error.message).toBe(
        'slack channel "sl": chat.postMessage failed: the platform refused the credentials (missing_scope); check channels[sl].bot_token',
      );
    });
  });

  describe('when Slack answers ok: false otherwise', () => {
    it('is rate limited for ratelimited, retryable for its own failures and final for the rest', () => {
      expect(toChannelError(platformError('ratelimited'), call).code).toBe('SB_CHANNEL_RATE_LIMITED');
      expect(toChannelError(platformError('internal_error'), call)).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
      });
      const final = toChannelError(platformError('channel_not_found'), call);
      expect(final).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect(final.message).toBe('slack channel "sl": chat.postMessage failed (channel_not_found)');
    });
  });

  describe('when the request got no answer', () => {
    it('is a retryable SB_CHANNEL_SEND_FAILED with the system code and without the token', () => {
      const original = Object.assign(new TypeError('fetch failed'), {
        cause: Object.assign(new Error(`connect ECONNREFUSED for ${TOKEN}`), { code: 'ECONNREFUSED' }),
      });
      const error = toChannelError(new webApi.WebAPIRequestError(original), call);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect(error.message).toBe('slack channel "sl": chat.postMessage failed: network error (ECONNREFUSED)');
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
    });
  });
});
