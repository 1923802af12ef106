import { describe, expect, it } from 'vitest';
import { channelFailure } from '../../src/outbound/channel-failure.js';

const where = { type: 'line', channelId: 'ln', call: 'POST /v2/bot/message/push' };
const TOKEN = 'secret-channel-access-token';

describe('channelFailure', () => {
  describe('when the platform rate-limits the call', () => {
    it('is a retryable SB_CHANNEL_RATE_LIMITED with the wait in ms', () => {
      const error = channelFailure(where, { status: 429, retryAfterMs: 2_000 });
      expect(error).toMatchObject({ code: 'SB_CHANNEL_RATE_LIMITED', retryable: true, retryAfterMs: 2_000 });
      expect(error.message).toBe(
        'line channel "ln": POST /v2/bot/message/push was rate-limited; the platform asks to wait 2000 ms',
      );
    });
  });

  describe('when the platform refuses the credential', () => {
    it('is SB_CHANNEL_AUTH_FAILED naming its config path, for 401 and 403', () => {
      for (const status of [401, 403]) {
        const error = channelFailure(
          where,
          { status, description: 'Authentication failed' },
          { credentialPath: 'channels[ln].token' },
        );
        expect(error).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED', retryable: false });
        expect(error.message).toBe(
          `line channel "ln": POST /v2/bot/message/push failed: the platform refused the credentials (HTTP ${status}: Authentication failed); check channels[ln].token`,
        );
      }
    });
  });

  describe('when the platform or the network fails', () => {
    it('is a retryable SB_CHANNEL_SEND_FAILED for 5xx, 408 and no answer', () => {
      expect(channelFailure(where, { status: 502 })).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: true,
      });
      expect(channelFailure(where, { status: 408 }).retryable).toBe(true);
      const network = channelFailure(where, { network: 'ECONNREFUSED' });
      expect(network).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: true });
      expect(network.message).toBe(
        'line channel "ln": POST /v2/bot/message/push failed: network error (ECONNREFUSED)',
      );
    });
  });

  describe('when the platform refuses the call itself', () => {
    it('is a final SB_CHANNEL_SEND_FAILED with what the platform said', () => {
      const error = channelFailure(where, {
        status: 400,
        code: 'invalid_to',
        description: 'The user is unknown',
      });
      expect(error).toMatchObject({ code: 'SB_CHANNEL_SEND_FAILED', retryable: false });
      expect(error.message).toBe(
        'line channel "ln": POST /v2/bot/message/push failed (HTTP 400: invalid_to: The user is unknown)',
      );
      expect(error.details).toEqual({
        call: 'POST /v2/bot/message/push',
        status: 400,
        code: 'invalid_to',
        description: 'The user is unknown',
      });
    });
  });

  describe('when the failure names its own kind', () => {
    it('follows the kind over the status', () => {
      expect(channelFailure(where, { status: 200, code: 'invalid_auth', kind: 'auth' }).code).toBe(
        'SB_CHANNEL_AUTH_FAILED',
      );
      expect(channelFailure(where, { status: 403, kind: 'refused' })).toMatchObject({
        code: 'SB_CHANNEL_SEND_FAILED',
        retryable: false,
      });
    });
  });

  describe('when the platform echoes a secret', () => {
    it('masks it in the message and every detail', () => {
      const error = channelFailure(
        { ...where, call: `POST /bot${TOKEN}/sendMessage` },
        { status: 400, description: `bad token ${TOKEN}`, code: encodeURIComponent(`x ${TOKEN}`) },
        { secrets: [TOKEN] },
      );
      expect(error.message).toContain('/bot***/sendMessage');
      expect(error.message).toContain('bad token ***');
      expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(TOKEN);
      expect(error.cause).toBeUndefined();
    });
  });
});
