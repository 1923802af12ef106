// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import type { SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/load-config.js';
import { thrown } from './thrown.js';

/** The error of parsing `text` with `env`; fails the test when it parses. */
function failure(text: string, env: Record<string, string>): SwitchboardError {
  return thrown(() => parseConfig(text, { env, source: 'test.yaml' }));
}

/** Everything a config error shows: its message, its details and its cause. */
function shown(error: SwitchboardError): string {
  return JSON.stringify({
    message: error.message,
    details: error.details,
    cause: String((error.cause as Error | undefined)?.message),
  });
}

describe('credentials clients send back (parseConfig)', () => {
  describe('when admin.token or an api_keys entry holds whitespace', () => {
    it('refuses each, naming its path, and never shows the value', () => {
      const error = failure(
        [
          'admin: { token: "${ADMIN_TOKEN}" }',
          'channels: [{ id: api, type: openapi, api_keys: [good-key, "${API_KEY}"] }]',
        ].join('\n'),
        { ADMIN_TOKEN: 'admin-s3cret\n', API_KEY: 'key with space' },
      );
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        'admin.token: must not contain whitespace, got a string',
        'channels[0].api_keys[1]: must not contain whitespace, got a string',
      ]);
      const everything = shown(error);
      for (const secret of ['admin-s3cret', 'key with space', 'with space']) {
        expect(everything).not.toContain(secret);
      }
    });

    it('refuses a token written in the file itself, without quoting it', () => {
      const error = failure('admin: { token: " leading-space" }', {});
      expect(error.details?.problems).toEqual(['admin.token: must not contain whitespace, got a string']);
      expect(shown(error)).not.toContain('leading-space');
    });
  });

  describe('when a bearer credential holds characters beyond visible ASCII', () => {
    it('refuses it, naming the path without the value', () => {
      const error = failure('channels: [{ id: api, type: openapi, api_keys: ["${API_KEY}"] }]', {
        API_KEY: 'clé-secrète',
      });
      expect(error.details?.problems).toEqual([
        'channels[0].api_keys[0]: must hold visible ASCII characters only (a bearer token), got a string',
      ]);
      expect(shown(error)).not.toContain('secrète');
    });
  });

  describe('when a platform token or signing secret holds whitespace', () => {
    it('refuses it, naming the path without the value', () => {
      const error = failure(
        [
          'channels:',
          '  - { id: sl, type: slack, bot_token: "${SLACK_BOT_TOKEN}", signing_secret: "${SLACK_SIGNING_SECRET}" }',
          '  - { id: dc, type: discord, token: "${DISCORD_BOT_TOKEN}" }',
        ].join('\n'),
        {
          SLACK_BOT_TOKEN: 'xoxb-fine',
          SLACK_SIGNING_SECRET: 'abc123\n',
          DISCORD_BOT_TOKEN: 'discord token',
        },
      );
      expect(error.details?.problems).toEqual([
        'channels[0].signing_secret: must not contain whitespace, got a string',
        'channels[1].token: must not contain whitespace, got a string',
      ]);
      expect(shown(error)).not.toContain('abc123');
      expect(shown(error)).not.toContain('discord token');
    });
  });

  describe('when the credentials are well formed or empty', () => {
    it('accepts them; an empty admin token and empty api_keys entries still mean none', () => {
      const config = parseConfig(
        [
          'admin: { token: "${ADMIN_TOKEN:-}" }',
          'channels: [{ id: api, type: openapi, api_keys: ["${API_KEY:-}", "k-9_+/=~."] }]',
        ].join('\n'),
        { env: {} },
      );
      expect(config.admin.token).toBeUndefined();
      expect(config.channels[0]).toMatchObject({ apiKeys: ['k-9_+/=~.'] });
    });
  });
});
