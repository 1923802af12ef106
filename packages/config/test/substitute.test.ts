// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createReferences, substituteEnv } from '../src/substitute.js';
import { thrown } from './thrown.js';

/** A secret file with `text` in a fresh folder; returns its path. */
function secretFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'switchboard-secret-')), 'secret');
  writeFileSync(path, text, { mode: 0o600 });
  return path;
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

  describe('when a value is read from a file with ${file:PATH}', () => {
    it('substitutes the text of the file without its trailing newline, inside a longer string too', () => {
      const token = secretFile('file-token-1\n');
      const key = secretFile('key-2\r\n\n');
      expect(substituteEnv({ token: `\${file:${token}}`, header: `Bearer \${file:${key}}` }, {})).toEqual({
        token: 'file-token-1',
        header: 'Bearer key-2',
      });
    });

    it('keeps newlines inside the text', () => {
      const path = secretFile('line 1\nline 2\n');
      expect(substituteEnv({ pem: `\${file:${path}}` }, {})).toEqual({ pem: 'line 1\nline 2' });
    });

    it('reports a missing or unreadable file by path and system error, never its text', () => {
      const missing = join(tmpdir(), 'switchboard-no-such-secret');
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-secret-'));
      const error = thrown(() =>
        substituteEnv(
          { channels: [{ token: `\${file:${missing}}` }], admin: { token: `\${file:${folder}}` } },
          {},
          'switchboard.yaml',
        ),
      );
      expect(error.code).toBe('SB_CONFIG_SECRET_FILE_UNREADABLE');
      expect(error.details?.problems).toEqual([
        `channels[0].token: cannot read the file ${missing}: ENOENT: no such file or directory`,
        `admin.token: cannot read the file ${folder}: not a regular file`,
      ]);
      expect(error.message).toMatch(/^switchboard\.yaml: secret files unreadable\n {2}channels\[0\]/);
    });

    it('refuses a file larger than a secret, without printing any of it', () => {
      const path = secretFile('SECRET-'.repeat(20_000));
      const error = thrown(() => substituteEnv({ token: `\${file:${path}}` }, {}));
      expect(error.details?.problems).toEqual([
        `token: cannot read the file ${path}: larger than 65536 bytes (a secret file holds one value)`,
      ]);
      expect(error.message).not.toContain('SECRET-');
    });

    it('refuses ${file:} without a path as malformed', () => {
      const error = thrown(() => substituteEnv({ token: '${file:}' }, {}));
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        expect.stringMatching(/^token: malformed variable reference "\$\{file:\}"/),
      ]);
    });
  });

  describe('when NAME is unset and NAME_FILE names a file (Docker secrets)', () => {
    it('substitutes the text of that file, before the default', () => {
      const path = secretFile('from-the-file\n');
      expect(substituteEnv({ a: '${TOKEN}', b: '${TOKEN:-default}' }, { TOKEN_FILE: path })).toEqual({
        a: 'from-the-file',
        b: 'from-the-file',
      });
    });

    it('refuses NAME and NAME_FILE both set, naming the variable, even when set empty', () => {
      const path = secretFile('from-the-file');
      const error = thrown(() =>
        substituteEnv({ channels: [{ token: '${TOKEN}' }] }, { TOKEN: '', TOKEN_FILE: path }),
      );
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.details?.problems).toEqual([
        'channels[0].token: environment variables TOKEN and TOKEN_FILE are both set: set one',
      ]);
    });

    it('reports a file it cannot read by the variable that names it', () => {
      const error = thrown(() => substituteEnv({ token: '${TOKEN}' }, { TOKEN_FILE: '/no/such/secret' }));
      expect(error.code).toBe('SB_CONFIG_SECRET_FILE_UNREADABLE');
      expect(error.details?.problems).toEqual([
        'token: cannot read the file of TOKEN_FILE, /no/such/secret: ENOENT: no such file or directory',
      ]);
    });
  });

  describe('when the same file is referenced several times', () => {
    it('reads it once per load and lists it among the files read', () => {
      const path = secretFile('first');
      const references = createReferences({ TOKEN_FILE: path });
      const document = references.substitute({ a: `\${file:${path}}`, b: `\${file:${path}}` }, 'test');
      writeFileSync(path, 'second');
      expect(document).toEqual({ a: 'first', b: 'first' });
      expect(references.valuesIn(`x \${file:${path}}`)).toEqual(['first']);
      expect(references.substitute({ c: '${TOKEN}' }, 'test')).toEqual({ c: 'second' });
      expect(references.files()).toEqual([path]);
    });
  });
});
