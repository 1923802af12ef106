import { describe, expect, it } from 'vitest';
import { createSecretMasker, SECRET_MASK } from '../../src/observability/secret-masker.js';

describe('createSecretMasker', () => {
  describe('when text contains configured secrets', () => {
    it('replaces every occurrence of each secret', () => {
      const mask = createSecretMasker(['123456:tg-token-value', 'sk-openai-key-1']);

      expect(mask('bot123456:tg-token-value/sendMessage sk-openai-key-1 then 123456:tg-token-value')).toBe(
        `bot${SECRET_MASK}/sendMessage ${SECRET_MASK} then ${SECRET_MASK}`,
      );
    });

    it('masks a secret that contains another one whole', () => {
      const mask = createSecretMasker(['secret-part', 'secret-part-and-more']);

      expect(mask('x secret-part-and-more y')).toBe(`x ${SECRET_MASK} y`);
    });

    it('masks the JSON-escaped and percent-encoded forms', () => {
      const secret = 'pa"ss\\word:42';
      const mask = createSecretMasker([secret]);

      expect(mask(JSON.stringify({ error: `got ${secret}` }))).toBe(
        JSON.stringify({ error: `got ${SECRET_MASK}` }),
      );
      expect(mask(`/bot${encodeURIComponent(secret)}/getMe`)).toBe(`/bot${SECRET_MASK}/getMe`);
    });

    it('treats regular expression characters in a secret literally', () => {
      const mask = createSecretMasker(['a.b*c+d?(x)']);

      expect(mask('a.b*c+d?(x) aXbbbcd')).toBe(`${SECRET_MASK} aXbbbcd`);
    });
  });

  describe('when a value is too short to be a secret', () => {
    it('leaves it alone rather than garble ordinary text', () => {
      const mask = createSecretMasker(['2', 'short', undefined, '']);

      expect(mask('{"time":1764575123456,"msg":"short"}')).toBe('{"time":1764575123456,"msg":"short"}');
    });
  });
});
