// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { isSwitchboardError, type SwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { substituteEnv } from '../src/substitute.js';

function thrown(run: () => unknown): SwitchboardError {
  try {
    run();
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw error;
  }
  throw new Error('expected a SwitchboardError');
}

describe('substituteEnv', () => {
  describe('when every variable is set', () => {
    it('replaces references inside strings at any depth', () => {
      const document = { channels: [{ token: '${TOKEN}', url: 'https://${HOST}:${PORT}/hook' }] };
      expect(substituteEnv(document, { TOKEN: 't0k', HOST: 'example.com', PORT: '8443' })).toEqual({
        channels: [{ token: 't0k', url: 'https://example.com:8443/hook' }],
      });
    });

    it('keeps a numeric value a string, for the schema to coerce', () => {
      expect(substituteEnv({ server: { port: '${PORT}' } }, { PORT: '9000' })).toEqual({
        server: { port: '9000' },
      });
    });

    it('prefers the variable over its default, even when the variable is empty', () => {
      expect(substituteEnv({ a: '${A:-fallback}', b: '${B:-fallback}' }, { A: 'set', B: '' })).toEqual({
        a: 'set',
        b: '',
      });
    });

    it('leaves numbers, booleans, null and mapping keys untouched', () => {
      const document = { '${KEY}': 1, on: true, off: null, list: [2.5] };
      expect(substituteEnv(document, { KEY: 'replaced' })).toEqual(document);
    });
  });

  describe('when a variable is unset', () => {
    it('uses the default after :-, which may be empty or contain ":" and "/"', () => {
      expect(substituteEnv({ url: '${BASE:-https://api.openai.com/v1}', token: '${TOKEN:-}' }, {})).toEqual({
        url: 'https://api.openai.com/v1',
        token: '',
      });
    });

    it('reports every missing variable at once with its YAML path', () => {
      const document = {
        channels: [{ id: 'api' }, { id: 'tg', token: '${TELEGRAM_BOT_TOKEN}' }],
        store: { url: 'redis://${REDIS_HOST}:${REDIS_PORT:-6379}' },
        pipelines: [{ api_key: '${OPENAI_API_KEY}' }],
      };
      const error = thrown(() => substituteEnv(document, {}, 'switchboard.yaml'));
      expect(error.code).toBe('SB_CONFIG_VARIABLE_MISSING');
      expect(error.details?.problems).toEqual([
        'channels[1].token: environment variable TELEGRAM_BOT_TOKEN is not set',
        'store.url: environment variable REDIS_HOST is not set',
        'pipelines[0].api_key: environment variable OPENAI_API_KEY is not set',
      ]);
      expect(error.message).toMatch(
        /^switchboard\.yaml: environment variables missing\n {2}channels\[1\]\.token/,
      );
    });
  });

  describe('when a reference is escaped with $${', () => {
    it('produces a literal ${ and does not look the name up', () => {
      expect(substituteEnv({ template: 'Hello $${NAME}, ${GREETING}' }, { GREETING: 'hi' })).toEqual({
        template: 'Hello ${NAME}, hi',
      });
    });
  });

  describe('when a reference is malformed', () => {
    it('reports each one as an invalid configuration with its path', () => {
      const error = thrown(() => substituteEnv({ a: '${}', b: ['${NOT VALID}'], c: 'x ${OPEN' }, {}));
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        expect.stringMatching(/^a: malformed variable reference "\$\{\}"/),
        expect.stringMatching(/^b\[0\]: malformed variable reference "\$\{NOT VALID\}"/),
        expect.stringMatching(/^c: malformed variable reference "\$\{"/),
      ]);
    });
  });

  describe('when a value contains YAML syntax', () => {
    it('stays one string instead of adding structure', () => {
      const injected = 'x\nadmin: { token: "" }\n- evil: [1, 2]';
      expect(substituteEnv({ channels: [{ token: '${TOKEN}' }] }, { TOKEN: injected })).toEqual({
        channels: [{ token: injected }],
      });
    });
  });
});
