import { describe, expect, it } from 'vitest';
import { mediaKeyOf, mediaTokenChannel, signMediaToken, verifyMediaToken } from '../../src/index.js';

const NOW = Date.UTC(2026, 0, 1);
const key = mediaKeyOf('a media secret of some length', 'tg');
const claims = {
  channel: 'tg',
  media: {
    type: 'image' as const,
    file_id: 'AgACAgIAAxkBAAIB',
    name: 'cat.jpg',
    mime_type: 'image/jpeg',
    size: 81_234,
  },
  expiresAtMs: NOW + 3_600_000,
};

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

describe('media tokens', () => {
  describe('when the token is as signed', () => {
    it('gives back the channel, the platform reference and the expiry', () => {
      const token = signMediaToken(key, claims);
      expect(mediaTokenChannel(token)).toBe('tg');
      expect(verifyMediaToken(key, token, NOW)).toEqual(claims);
    });

    it('gives back the id of the message the file came in', () => {
      const withMessage = {
        ...claims,
        media: { ...claims.media, message_id: 'om_dc13264520392913993dd051dba21dcf' },
      };
      expect(verifyMediaToken(key, signMediaToken(key, withMessage), NOW)).toEqual(withMessage);
    });

    it('is URL-safe as it is', () => {
      expect(signMediaToken(key, claims)).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    });
  });

  describe('when the token was tampered with', () => {
    it('refuses a changed claim as invalid', () => {
      const [, signature] = signMediaToken(key, claims).split('.');
      const other = signMediaToken(mediaKeyOf('x', 'y'), {
        ...claims,
        media: { ...claims.media, file_id: 'other' },
      });
      const [payload] = other.split('.');
      expect(codeOf(() => verifyMediaToken(key, `${payload}.${signature}`, NOW))).toBe(
        'SB_MEDIA_TOKEN_INVALID',
      );
    });

    it('refuses a token signed with another channel key as invalid', () => {
      const token = signMediaToken(mediaKeyOf('a media secret of some length', 'slack'), claims);
      expect(codeOf(() => verifyMediaToken(key, token, NOW))).toBe('SB_MEDIA_TOKEN_INVALID');
    });

    it.each(['', 'abc', 'a.b.c', '!!!.???', `${Buffer.from('{"c":1}').toString('base64url')}.x`])(
      'refuses the malformed token %j as invalid',
      (token) => {
        expect(codeOf(() => verifyMediaToken(key, token, NOW))).toBe('SB_MEDIA_TOKEN_INVALID');
      },
    );
  });

  describe('when the token is past its expiry', () => {
    it('refuses it as expired', () => {
      const token = signMediaToken(key, claims);
      expect(codeOf(() => verifyMediaToken(key, token, NOW + 3_601_000))).toBe('SB_MEDIA_TOKEN_EXPIRED');
    });

    it('says invalid, not expired, for a forged expired token', () => {
      const token = signMediaToken(mediaKeyOf('guess', 'tg'), claims);
      expect(codeOf(() => verifyMediaToken(key, token, NOW + 3_601_000))).toBe('SB_MEDIA_TOKEN_INVALID');
    });
  });
});
