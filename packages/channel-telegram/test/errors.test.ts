import { GrammyError, HttpError } from 'grammy';
import { describe, expect, it } from 'vitest';
import { toChannelError } from '../src/errors.js';

const TOKEN = '123456789:AAH-secret-token';
const call = { channelId: 'tg', method: 'sendMessage', token: TOKEN };

function apiError(error_code: number, description: string, parameters?: { retry_after?: number }) {
  return new GrammyError(
    "Call to 'sendMessage' failed!",
    { ok: false, error_code, description, parameters },
    'sendMessage',
    {},
  );
}

describe('toChannelError', () => {
  describe('when Telegram rate-limits the call', () => {
    it('is SB_CHANNEL_RATE_LIMITED with the wait in milliseconds', () => {
      const error = toChannelError(
        apiError(429, 'Too Many Requests: retry after 120', { retry_after: 120 }),
        call,
      );
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_RATE_LIMITED',
        retryable: true,
        retryAfterMs: 120_000,
      });
    });
  });

  describe('when the token is refused', () => {
    it('is SB_CHANNEL_AUTH_FAILED for 401 and 404, naming the config field', () => {
      const refused = toChannelError(apiError(401, 'Unauthorized'), call);
      expect(refused.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(refused.message).toContain('check channels[tg].token');
      expect(toChannelError(apiError(404, 'Not Found'), call).code).toBe('SB_CHANNEL_AUTH_FAILED');
    });
  });

  describe('when the call fails otherwise', () => {
    it('is a final SB_CHANNEL_SEND_FAILED for other 4xx and a retryable one for 5xx', () => {
      const blocked = toChannelError(apiError(403, 'Forbidden: bot was blocked by the user'), call);
      expect(blocked).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect(blocked.message).toContain('Forbidden: bot was blocked by the user');
      expect(toChannelError(apiError(502, 'Bad Gateway'), call)).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
      });
    });

    it('never carries the token of a network error, which grammY keeps in the URL', () => {
      const cause = Object.assign(
        new Error(
          `request to http://127.0.0.1:1/bot${TOKEN}/sendMessage failed, reason: connect ECONNREFUSED`,
        ),
        {
          code: 'ECONNREFUSED',
        },
      );
      const error = toChannelError(new HttpError("Network request for 'sendMessage' failed!", cause), call);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
        details: { network: 'ECONNREFUSED' },
      });
      expect(
        JSON.stringify({ message: error.message, details: error.details, cause: error.cause }),
      ).not.toContain(TOKEN);
    });
  });
});
