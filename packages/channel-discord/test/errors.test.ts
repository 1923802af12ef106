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
  const call = { channelId: 'dc', call: 'POST /channels/600/messages', token: TOKEN };

  describe('when Discord refuses the message (403 Missing Permissions)', () => {
    it('is SB_CHANNEL_SEND_FAILED, not retryable, naming the route and Discord code', () => {
      const error = toSendError(apiError(403, 50013, 'Missing Permissions'), call);
      expect(error.code).toBe('SB_CHANNEL_SEND_FAILED');
      expect(error.retryable).toBe(false);
      expect(error.message).toBe(
        'discord channel "dc": POST /channels/600/messages failed (HTTP 403: 50013: Missing Permissions)',
      );
      expect(error.details).toEqual({
        call: 'POST /channels/600/messages',
        status: 403,
        code: 50013,
        description: 'Missing Permissions',
        kind: 'refused',
      });
    });
  });

  describe('when Discord refuses the token (401)', () => {
    it('is SB_CHANNEL_AUTH_FAILED naming the config field', () => {
      const error = toSendError(apiError(401, 0, '401: Unauthorized'), call);
      expect(error.code).toBe('SB_CHANNEL_AUTH_FAILED');
      expect(error.message).toContain('check channels[dc].token');
    });
  });

  describe('when Discord keeps answering 5xx', () => {
    it('is a retryable SB_CHANNEL_SEND_FAILED', () => {
      const error = toSendError(new HTTPError(502, 'Bad Gateway', 'POST', url, body), call);
      expect(error).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
        details: { status: 502 },
      });
    });
  });

  describe('when the network fails with a message that contains the token', () => {
    it('is retryable and carries neither the token nor the original error', () => {
      const hangUp = Object.assign(new Error(`socket hang up for Bot ${TOKEN}`), { code: 'ECONNRESET' });
      const error = toSendError(hangUp, call);
      expect(error.retryable).toBe(true);
      expect(error.message).toBe(
        'discord channel "dc": POST /channels/600/messages failed: network error (ECONNRESET)',
      );
      expect(error.cause).toBeUndefined();
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
    });
  });

  describe('when Discord echoes the token in its message', () => {
    it('masks it', () => {
      const error = toSendError(apiError(400, 50035, `Invalid Form Body near ${TOKEN}`), call);
      expect(error.message).toContain('Invalid Form Body near ***');
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
