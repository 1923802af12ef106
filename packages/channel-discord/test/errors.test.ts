import { DiscordAPIError, HTTPError } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { toSendError, toStartError } from '../src/errors.js';

const TOKEN = 'MTEwMDAwMDAwMDAwMDAwMDAwMQ.secret-token-part';
const url = 'https://discord.com/api/v10/channels/600/messages';
const body = { body: { content: 'hi' }, files: undefined };

function apiError(status: number, code: number, message: string) {
  return new DiscordAPIError({ code, message }, code, status, 'POST', url, body);
}

describe('toSendError', () => {
  describe('when Discord refuses the message (403 Missing Permissions)', () => {
    it('is SB_CHANNEL_SEND_FAILED, not retryable, naming the channel and Discord code', () => {
      const error = toSendError(apiError(403, 50013, 'Missing Permissions'), '600', TOKEN);
      expect(error.code).toBe('SB_CHANNEL_SEND_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.message).toBe(
        'Discord refused the message for channel 600: Missing Permissions (HTTP 403)',
      );
      expect(error.details).toEqual({ channelId: '600', status: 403, discordCode: 50013 });
    });
  });

  describe('when Discord refuses the token (401)', () => {
    it('is SB_CHANNEL_AUTH_FAILED', () => {
      expect(toSendError(apiError(401, 0, '401: Unauthorized'), '600', TOKEN).code).toBe(
        'SB_CHANNEL_AUTH_FAILED',
      );
    });
  });

  describe('when Discord keeps answering 5xx', () => {
    it('is a retryable SB_CHANNEL_SEND_FAILED', () => {
      const error = toSendError(new HTTPError(502, 'Bad Gateway', 'POST', url, body), '600', TOKEN);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
        details: { status: 502 },
      });
    });
  });

  describe('when the network fails with a message that contains the token', () => {
    it('is retryable and carries neither the token nor the original error', () => {
      const error = toSendError(new Error(`socket hang up for Bot ${TOKEN}`), '600', TOKEN);
      expect(error.retryable).toBe(true);
      expect(error.message).toBe(
        'could not reach Discord while sending to channel 600: socket hang up for Bot [redacted]',
      );
      expect(error.cause).toBeUndefined();
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
    });
  });
});

describe('toStartError', () => {
  describe('when discord.js reports an invalid token', () => {
    it('is SB_CHANNEL_AUTH_FAILED naming the config field', () => {
      const invalid = Object.assign(new Error('An invalid token was provided.'), { code: 'TokenInvalid' });
      const error = toStartError(invalid, 'dc', TOKEN);
      expect(error.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(error.message).toBe('channels[dc].token: Discord refused the bot token');
    });
  });

  describe('when the gateway refuses the Message Content intent', () => {
    it('is SB_CHANNEL_AUTH_FAILED saying where to enable it', () => {
      const error = toStartError(new Error('Used disallowed intents'), 'dc', TOKEN);
      expect(error.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(error.message).toContain('Privileged Gateway Intents');
    });
  });

  describe('when the gateway cannot be reached', () => {
    it('is a retryable error without the token', () => {
      const error = toStartError(new Error(`connect ECONNREFUSED (token ${TOKEN})`), 'dc', TOKEN);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_UNREACHABLE', retryable: true });
      expect(error.message).not.toContain(TOKEN);
    });
  });
});
