// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../src/load-config.js';
import { thrown } from './thrown.js';

const CONFIG_DIR = fileURLToPath(new URL('../../../config/', import.meta.url));

/** Every variable the shipped files reference without a default. */
const EXAMPLE_ENV = {
  ASSISTANT_URL: 'http://127.0.0.1:9000/answer',
  ASSISTANT_SECRET: 'assistant-secret',
  OPENAI_API_KEY: 'sk-test',
  AGENT_API_KEY: 'agent-key-test',
  TELEGRAM_BOT_TOKEN: '123:abc',
  SLACK_BOT_TOKEN: 'xoxb-test',
  SLACK_SIGNING_SECRET: 'signing-secret',
  DISCORD_BOT_TOKEN: 'discord-token',
  FEISHU_APP_ID: 'cli_test',
  FEISHU_APP_SECRET: 'feishu-app-secret',
  FEISHU_ENCRYPT_KEY: 'feishu-encrypt-key',
  FEISHU_VERIFICATION_TOKEN: 'feishu-verification-token',
  LINE_CHANNEL_SECRET: 'line-channel-secret',
  LINE_CHANNEL_ACCESS_TOKEN: 'line-access-token',
  WHATSAPP_PHONE_NUMBER_ID: '106540352242922',
  WHATSAPP_ACCESS_TOKEN: 'whatsapp-access-token',
  WHATSAPP_APP_SECRET: 'whatsapp-app-secret',
  WHATSAPP_VERIFY_TOKEN: 'whatsapp-verify-token',
  TEAMS_APP_ID: '00000000-0000-0000-0000-0000000000aa',
  TEAMS_APP_PASSWORD: 'teams-app-password',
  REDIS_URL: 'redis://127.0.0.1:6379',
  DATABASE_URL: 'postgres://127.0.0.1:5432/test',
  SWITCHBOARD_API_KEY: 'api-key',
  SWITCHBOARD_ADMIN_TOKEN: 'admin-token',
};

function problems(text: string, env: Record<string, string> = {}): string[] {
  const error = thrown(() => parseConfig(text, { env, source: 'test.yaml' }));
  expect(error.code).toBe('SB_CONFIG_INVALID');
  return error.details?.problems as string[];
}

describe('parseConfig', () => {
  describe('when the text is empty', () => {
    it('returns the quick start defaults', () => {
      const config = parseConfig('', { env: {} });
      expect(config.channels.map((channel) => channel.id)).toEqual(['api']);
      expect(config.pipelines.map((pipeline) => pipeline.id)).toEqual(['echo']);
      expect(config.routing.default).toBe('echo');
    });
  });

  describe('when the YAML is malformed', () => {
    it('reports file:line:col', () => {
      const error = thrown(() =>
        parseConfig('server:\n  port: 8080\nchannels: [\n  { id: api\n', { source: 'bad.yaml', env: {} }),
      );
      expect(error.code).toBe('SB_CONFIG_INVALID');
      expect(error.message).toMatch(/^bad\.yaml: invalid configuration\n {2}bad\.yaml:\d+:\d+: /);
    });

    it('refuses a key written twice', () => {
      expect(problems('server:\n  port: 1\n  port: 2\n')).toEqual([
        expect.stringMatching(/^test\.yaml:3:3: Map keys must be unique/),
      ]);
    });

    it('names an alias without its anchor by line and column', () => {
      expect(problems('server:\n  port: *missing\nstore: { kind: *memory }\n')).toEqual([
        'test.yaml:2:9: unresolved alias *missing (no &missing before it)',
        'test.yaml:3:16: unresolved alias *memory (no &memory before it)',
      ]);
    });

    it('refuses aliases that expand to an exponential number of nodes', () => {
      const bomb = [
        'a: &a [x, x, x, x, x, x, x, x, x]',
        'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
        'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
        'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
      ].join('\n');
      expect(problems(bomb)).toEqual(['test.yaml: aliases expand to more than 100 nodes each']);
    });
  });

  describe('when values come from ${VAR}', () => {
    it('coerces a numeric port and applies defaults', () => {
      expect(parseConfig('server: { port: "${PORT:-8080}" }', { env: {} }).server.port).toBe(8080);
      expect(parseConfig('server: { port: "${PORT:-8080}" }', { env: { PORT: '9090' } }).server.port).toBe(
        9090,
      );
    });

    it('cannot add YAML structure through a value', () => {
      const host = 'x\nport: 1';
      const config = parseConfig('server:\n  host: ${HOST}\n', { env: { HOST: host } });
      expect(config.server.host).toBe(host);
      expect(config.server.port).toBe(8080);
    });

    it('lists every missing variable with its path', () => {
      const text = [
        'channels:',
        '  - { id: api, type: openapi }',
        '  - { id: tg, type: telegram, token: "${TELEGRAM_BOT_TOKEN}" }',
        'store: { kind: redis, url: "${REDIS_URL}" }',
      ].join('\n');
      const error = thrown(() => parseConfig(text, { env: {}, source: 'sb.yaml' }));
      expect(error.code).toBe('SB_CONFIG_VARIABLE_MISSING');
      expect(error.details?.problems).toEqual([
        'channels[1].token: environment variable TELEGRAM_BOT_TOKEN is not set',
        'store.url: environment variable REDIS_URL is not set',
      ]);
    });
  });

  describe('when the schema refuses values', () => {
    it('refuses a redis store without postgres audit, naming audit.kind', () => {
      const error = thrown(() =>
        parseConfig('store: { kind: redis, url: "redis://127.0.0.1:6379" }\naudit: { path: ./audit.db }', {
          env: {},
          source: 'sb.yaml',
        }),
      );
      expect(error.message).toBe(
        'sb.yaml: invalid configuration\n  audit.kind: store.kind redis needs audit.kind postgres (replicas sharing a pool share its audit log, statuses and history)',
      );
    });

    it('refuses a replication wait the command timeout could not cover, naming store.wait_timeout and store.wait_replicas', () => {
      const error = thrown(() =>
        parseConfig(
          'store: { kind: redis, url: "redis://127.0.0.1:6379", wait_replicas: -1, wait_timeout: 2s }\naudit: { kind: postgres, url: "postgres://127.0.0.1/test" }',
          { env: {}, source: 'sb.yaml' },
        ),
      );
      expect(error.message).toBe(
        'sb.yaml: invalid configuration\n  store.wait_replicas: must be >= 0, got -1\n  store.wait_timeout: must be between 10ms and 1s, got "2s"',
      );
    });

    it('reads wait_replicas and wait_timeout of a redis store (ms), 0 and 500 ms when left out', () => {
      const audit = 'audit: { kind: postgres, url: "postgres://127.0.0.1/test" }';
      const waited = parseConfig(
        `store: { kind: redis, url: "redis://127.0.0.1:6379", wait_replicas: 2, wait_timeout: 250ms }\n${audit}`,
        { env: {} },
      );
      const plain = parseConfig(`store: { kind: redis, url: "redis://127.0.0.1:6379" }\n${audit}`, {
        env: {},
      });
      expect([waited.store, plain.store]).toMatchObject([
        { wait_replicas: 2, wait_timeout: 250 },
        { wait_replicas: 0, wait_timeout: 500 },
      ]);
    });

    it('takes the seed nodes of a Redis Cluster in store.cluster, and refuses it beside store.url or neither', () => {
      const audit = 'audit: { kind: postgres, url: "postgres://127.0.0.1/test" }';
      const seeds = '["redis://127.0.0.1:7000", "redis://127.0.0.1:7001"]';
      expect(
        parseConfig(`store: { kind: redis, cluster: ${seeds} }\n${audit}`, { env: {} }).store,
      ).toMatchObject({
        cluster: ['redis://127.0.0.1:7000', 'redis://127.0.0.1:7001'],
      });
      const both = thrown(() =>
        parseConfig(`store: { kind: redis, url: "redis://127.0.0.1:6379", cluster: ${seeds} }\n${audit}`, {
          env: {},
          source: 'sb.yaml',
        }),
      );
      expect(both.message).toBe(
        'sb.yaml: invalid configuration\n  store.cluster: give either url (one Redis) or cluster (the seed nodes of a Redis Cluster)',
      );
      const neither = thrown(() =>
        parseConfig(`store: { kind: redis }\n${audit}`, { env: {}, source: 'sb.yaml' }),
      );
      expect(neither.message).toBe(
        'sb.yaml: invalid configuration\n  store.url: give either url (one Redis) or cluster (the seed nodes of a Redis Cluster)',
      );
      const notUrl = thrown(() =>
        parseConfig(`store: { kind: redis, cluster: ["http://127.0.0.1:7000"] }\n${audit}`, {
          env: {},
          source: 'sb.yaml',
        }),
      );
      expect(notUrl.message).toContain('store.cluster[0]: must be a redis:// or rediss:// URL');
    });

    it('starts the message with the source and lists one line per problem', () => {
      const error = thrown(() =>
        parseConfig('store: { kind: mongo }\nserver: { port: 70000 }', { env: {}, source: 'sb.yaml' }),
      );
      expect(error.message).toBe(
        'sb.yaml: invalid configuration\n  server.port: must be <= 65535, got 70000\n  store.kind: expected one of sqlite|memory|redis, got "mongo"',
      );
    });

    it('names problems of the document itself (root)', () => {
      expect(problems('- 1')).toEqual(['(root): expected object, got a list']);
    });

    it('names unknown keys at every depth with their path', () => {
      const text = [
        'servr: {}',
        'server: { prot: 80 }',
        'channels:',
        '  - { id: tg, type: telegram, token: t, group: { require_mentions: false } }',
        'pipelines:',
        '  - { id: echo, type: echo, aggregation: { enabled: true, dely: 2s } }',
      ].join('\n');
      expect(problems(text).sort()).toEqual(
        [
          '(root): unrecognized key "servr"',
          'server: unrecognized key "prot"',
          'channels[0].group: unrecognized key "require_mentions"',
          'pipelines[0].aggregation: unrecognized key "dely"',
        ].sort(),
      );
    });

    it('names wrong types and enum values with the value given', () => {
      const text = [
        'audit: { ignored: "yes please", store_text: partial }',
        'concurrency: { pipeline: many }',
        'channels:',
        '  - { id: tg, type: telegram, token: t, mode: push, session_scope: [chat] }',
        '  - { id: "bad id", type: carrier-pigeon }',
        'pipelines:',
        '  - { id: echo, type: echo, busy_mode: drop }',
      ].join('\n');
      expect(problems(text).sort()).toEqual(
        [
          'audit.ignored: expected boolean, got "yes please"',
          'audit.store_text: expected full, none or a number of characters (at least 1), got "partial"',
          'concurrency.pipeline: expected a number, got "many"',
          'channels[0].mode: expected one of polling|webhook, got "push"',
          'channels[0].session_scope: expected one of chat|thread, got a list',
          'channels[1].type: expected one of openapi|telegram|slack|discord|line|whatsapp|teams|feishu, got "carrier-pigeon"',
          'pipelines[0].busy_mode: expected one of queue|collect, got "drop"',
        ].sort(),
      );
    });

    it('names a number that is not one, a substituted one by its kind only', () => {
      expect(problems('server: { port: "${PORT}", body_limit: [1] }', { PORT: '80x' })).toEqual([
        'server.port: expected a number, got a string',
        'server.body_limit: expected number or string, got a list',
      ]);
    });

    it('reports a missing required field', () => {
      expect(problems('channels: [{ id: tg, type: telegram }]')).toEqual([
        'channels[0].token: required (expected string)',
      ]);
    });

    it('requires the Slack signing secret unless Socket Mode is on', () => {
      expect(problems('channels: [{ id: sl, type: slack, bot_token: b }]')).toEqual([
        'channels[0].signing_secret: required for the Events API (or set app_token for Socket Mode)',
      ]);
      const socketMode = parseConfig('channels: [{ id: sl, type: slack, bot_token: b, app_token: xapp-1 }]', {
        env: {},
      });
      expect(socketMode.channels[0]).toMatchObject({
        transport: { mode: 'socket_mode', appToken: 'xapp-1' },
      });
    });

    it('never echoes a value under a secret key', () => {
      const lines = problems(
        'channels: [{ id: tg, type: telegram, token: t, mode: webhook, webhook: { secret_token: "my secret!" } }]',
      );
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^channels\[0\]\.webhook\.secret_token: /);
      expect(lines[0]).not.toContain('my secret!');
    });
    it('names only the type of a secret field given the wrong type, in the lines and the cause', () => {
      const key = 'sk-live-0123456789abcdef';
      const error = thrown(() =>
        parseConfig(
          [
            'admin: { token: 12345678901234 }',
            'channels: [{ id: api, type: openapi, api_keys: "${SWITCHBOARD_API_KEY}" }]',
          ].join('\n'),
          { env: { SWITCHBOARD_API_KEY: key }, source: 'test.yaml' },
        ),
      );

      expect(error.details?.problems).toEqual([
        'admin.token: expected string, got a number',
        'channels[0].api_keys: expected array, got a string',
      ]);
      const everything = JSON.stringify({ message: error.message, details: error.details });
      for (const text of [everything, String((error.cause as Error | undefined)?.message)]) {
        expect(text).not.toContain(key);
        expect(text).not.toContain('12345678901234');
      }
    });

    it('never echoes a value that came from a ${VAR}, even at a place no secret field marks', () => {
      const token = 'ADMINTOKEN-SECRET-0123456789';
      const lines = problems(
        [
          'admin: "${TOK}"',
          'server: { port: "${PORT}" }',
          'store: { kind: "x-${TOK}" }',
          'channels: [{ id: tg, type: telegram, token: t, mode: webhook, webhook: "${TOK}" }]',
        ].join('\n'),
        { TOK: token, PORT: `80-${token}` },
      );
      expect(lines).toEqual([
        'server.port: expected a number, got a string',
        'admin: expected object, got a string',
        'store.kind: expected one of sqlite|memory|redis, got a string',
        'channels[0].webhook: expected object, got a string',
      ]);
      expect(lines.join('\n')).not.toContain('ADMINTOKEN');
    });

    it('never echoes a value read from a secret file, wherever it lands', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'switchboard-config-'));
      const tokenFile = join(dir, 'token');
      await writeFile(tokenFile, 'FILETOKEN-SECRET-0123456789\n', { mode: 0o600 });
      const lines = problems(`admin: "\${file:${tokenFile}}"\nserver: { port: "\${PORT}" }`, {
        PORT_FILE: tokenFile,
      });
      expect(lines).toEqual([
        'server.port: expected a number, got a string',
        'admin: expected object, got a string',
      ]);
      expect(lines.join('\n')).not.toContain('FILETOKEN');
    });

    it("never echoes a routing value that came from a ${VAR}, in the router's own lines", () => {
      const secret = '([SECRET-PATTERN-0123456789';
      const lines = problems(
        [
          'routing:',
          '  default: echo',
          '  rules:',
          '    - { name: a, type: message_content, operator: regex, value: "${RX}", pipeline: echo }',
        ].join('\n'),
        { RX: secret },
      );
      expect(lines).toEqual([
        expect.stringMatching(/^routing\.rules\[0\]\.value: invalid regular expression a string \(/),
      ]);
      expect(lines.join('\n')).not.toContain('SECRET-PATTERN');
      // RE2's reason quotes the faulty range of the pattern.
      expect(lines.join('\n')).not.toContain('T-P');
    });

    it('never echoes a list given as a ${VAR} where a list of mappings belongs', () => {
      const token = '123456:TELEGRAM-SECRET-abcdefghijklmnop';
      expect(problems('channels: "${TG}"', { TG: token })).toEqual([
        'channels: expected array, got a string',
      ]);
    });

    it('masks the password of a URL it shows', () => {
      const lines = problems(
        'pipelines: [{ id: h, type: http, url: "ftp://admin:hunter2@backend:21/" }]\nrouting: { default: h }',
      );
      expect(lines).toEqual(['pipelines[0].url: must be an http(s) URL, got "ftp://admin:***@backend:21/"']);
    });

    it('shows only the kind of a wrong audit PostgreSQL URL, which may hold a password', () => {
      const lines = problems('audit: { kind: postgres, url: "mysql://admin:hunter2@db:3306/audit" }');
      expect(lines).toEqual(['audit.url: must be a postgres:// or postgresql:// URL, got a string']);
    });
  });

  describe('when the configuration holds secrets', () => {
    it('lists every value of a field marked secret, and nothing else', () => {
      const config = parseConfig(
        [
          'admin: { token: admin-token-1 }',
          'channels:',
          '  - { id: api, type: openapi, api_keys: [api-key-1, api-key-2, ""] }',
          '  - { id: tg, type: telegram, token: "123:tg-token", mode: webhook, webhook: { secret_token: tg-webhook-1 } }',
          '  - { id: sl, type: slack, bot_token: xoxb-1, signing_secret: slack-signing-1, app_token: xapp-1 }',
          '  - { id: dc, type: discord, token: discord-token-1 }',
          'pipelines:',
          '  - { id: hook, type: http, url: "http://127.0.0.1:9/x", secret: http-secret-1, headers: { authorization: "Bearer header-1" } }',
          '  - { id: llm, type: openai, api_key: sk-openai-1, model: m }',
          'routing: { default: hook }',
        ].join('\n'),
        { env: {} },
      );

      expect([...config.secrets].sort()).toEqual(
        [
          'admin-token-1',
          'api-key-1',
          'api-key-2',
          '123:tg-token',
          'tg-webhook-1',
          'xoxb-1',
          'slack-signing-1',
          'xapp-1',
          'discord-token-1',
          'http-secret-1',
          'Bearer header-1',
          'sk-openai-1',
        ].sort(),
      );
    });

    it('also lists the value of each variable referenced inside a secret field, alone', () => {
      const config = parseConfig(
        [
          'pipelines:',
          '  - id: hook',
          '    type: http',
          '    url: "http://127.0.0.1:9/${HOOK_PATH}"',
          '    headers: { authorization: "Bearer ${HOOK_KEY}", x-tenant: "${TENANT:-tenant-default-1}" }',
          'routing: { default: hook }',
        ].join('\n'),
        { env: { HOOK_KEY: 'hook-key-value-1', HOOK_PATH: 'not-secret-path' } },
      );

      expect([...config.secrets].sort()).toEqual(
        ['Bearer hook-key-value-1', 'hook-key-value-1', 'tenant-default-1'].sort(),
      );
    });
  });

  describe('when secrets are read from files', () => {
    it('lists their values for the masker and the files read', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'switchboard-config-'));
      const adminFile = join(dir, 'admin-token');
      const botFile = join(dir, 'bot-token');
      await writeFile(adminFile, 'admin-token-from-file\n', { mode: 0o600 });
      await writeFile(botFile, '123:bot-token-from-file\n', { mode: 0o600 });
      const config = parseConfig(
        [
          `admin: { token: "\${file:${adminFile}}" }`,
          'channels: [{ id: tg, type: telegram, token: "${TELEGRAM_BOT_TOKEN}", mode: polling }]',
        ].join('\n'),
        { env: { TELEGRAM_BOT_TOKEN_FILE: botFile } },
      );

      expect(config.admin.token).toBe('admin-token-from-file');
      expect([...config.secrets].sort()).toEqual(['123:bot-token-from-file', 'admin-token-from-file']);
      expect([...config.secretFiles].sort()).toEqual([adminFile, botFile].sort());
    });

    it('masks a value read from a file whatever field it went to, and the audit PostgreSQL URL', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'switchboard-config-'));
      const redisUrlFile = join(dir, 'redis-url');
      await writeFile(redisUrlFile, 'redis://:redis-password-1@127.0.0.1:6379\n', { mode: 0o600 });
      const hostFile = join(dir, 'host');
      await writeFile(hostFile, '127.0.0.9\n', { mode: 0o600 });
      const config = parseConfig(
        [
          `store: { kind: redis, url: "\${file:${redisUrlFile}}" }`,
          'audit: { kind: postgres, url: "postgres://sb:pg-password-1@127.0.0.1:5432/test" }',
          `server: { host: "\${file:${hostFile}}" }`,
        ].join('\n'),
        { env: {} },
      );

      expect([...config.secrets].sort()).toEqual(
        [
          '127.0.0.9',
          'postgres://sb:pg-password-1@127.0.0.1:5432/test',
          'redis://:redis-password-1@127.0.0.1:6379',
        ].sort(),
      );
    });
  });

  describe('when durations are given', () => {
    it('accepts 1500ms, 1.5s, 5m and bare milliseconds', () => {
      const config = parseConfig(
        [
          'shutdown: { drain_timeout: 1500ms }',
          'pipelines:',
          '  - { id: echo, type: echo, timeout: 1.5s, retry: { max_delay: 5m, base_delay: 250 } }',
        ].join('\n'),
        { env: {} },
      );
      expect(config.shutdown.drainTimeoutMs).toBe(1500);
      expect(config.pipelines[0]?.policy).toMatchObject({
        timeoutMs: 1500,
        retry: { maxDelayMs: 300_000, baseDelayMs: 250 },
      });
    });

    it('refuses an unknown unit with the path and value', () => {
      expect(problems('shutdown: { drain_timeout: 5 parsecs }')).toEqual([
        'shutdown.drain_timeout: invalid duration "5 parsecs" (use e.g. 1500ms, 1.5s, 5m)',
      ]);
    });

    it('refuses durations past their bound, every one named by its path', () => {
      const text = [
        'shutdown: { drain_timeout: 720h }',
        'channels: [{ id: api, type: openapi, wait_timeout: 1h, max_wait_timeout: 2h }]',
        'pipelines:',
        '  - { id: echo, type: echo, timeout: 2h, retry: { max_delay: 600h, base_delay: 9000000000 } }',
      ].join('\n');
      expect(problems(text)).toEqual([
        'shutdown.drain_timeout: must be at most 1h, got "720h"',
        'channels[0].wait_timeout: must be at most 10m, got "1h"',
        'channels[0].max_wait_timeout: must be at most 10m, got "2h"',
        'pipelines[0].timeout: must be between 1s and 1h, got "2h"',
        'pipelines[0].retry.base_delay: must be at most 1h, got 9000000000',
        'pipelines[0].retry.max_delay: must be at most 1h, got "600h"',
      ]);
    });
  });

  describe('when routing is invalid', () => {
    it('merges the router problems with the schema problems', () => {
      const text = [
        'server: { port: -1 }',
        'pipelines: [{ id: echo, type: echo }, { id: bot, type: http, url: "http://127.0.0.1:9/x" }]',
        'routing:',
        '  default: echo',
        '  rules:',
        '    - { name: a, type: message_content, operator: contains, value: hi, pipeline: bot }',
        '    - { name: b, type: channel, operator: eq, value: api, pipeline: missing }',
        '    - { name: c, type: message_content, operator: regex, value: "([", pipeline: echo }',
      ].join('\n');
      expect(problems(text)).toEqual([
        'server.port: must be >= 0, got -1',
        expect.stringMatching(/^routing\.rules\[2\]\.value: invalid regular expression "\(\[" \(.+\)$/),
        'routing.rules[1].pipeline: unknown pipeline "missing" (known: echo, bot)',
      ]);
    });

    it('checks the default route against the configured pipelines', () => {
      expect(problems('pipelines: [{ id: bot, type: http, url: "http://127.0.0.1:9/x" }]')).toEqual([
        'routing.default: unknown pipeline "echo" (known: bot)',
      ]);
    });

    it('accepts __discard__ as a target', () => {
      const config = parseConfig(
        'routing: { default: echo, rules: [{ name: drop, type: sender_id, operator: eq, value: spammer, pipeline: __discard__ }] }',
        { env: {} },
      );
      expect(config.routing.rules).toHaveLength(1);
    });
  });
});

describe('loadConfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'switchboard-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('when the file does not exist', () => {
    it('throws SB_CONFIG_NOT_FOUND naming the path', async () => {
      const path = join(dir, 'absent.yaml');
      await expect(loadConfig(path)).rejects.toMatchObject({
        code: 'SB_CONFIG_NOT_FOUND',
        message: `configuration file not found: ${path}`,
        details: { path },
      });
    });
  });

  describe('when the file is invalid', () => {
    it('names the file in the message', async () => {
      const path = join(dir, 'invalid.yaml');
      await writeFile(path, 'queue: { max_pending: 0 }\n');
      await expect(loadConfig(path, { env: {} })).rejects.toMatchObject({
        code: 'SB_CONFIG_INVALID',
        message: `${path}: invalid configuration\n  queue.max_pending: must be >= 1, got 0`,
      });
    });
  });

  describe('when loading the quick start', () => {
    it('parses config/switchboard.yaml with no variables set', async () => {
      const config = await loadConfig(join(CONFIG_DIR, 'switchboard.yaml'), { env: {} });
      expect(config.server.port).toBe(8080);
      expect(config.admin.token).toBeUndefined();
      expect(config.store).toEqual({ kind: 'sqlite', path: './data/switchboard.db' });
      expect(config.channels).toMatchObject([{ id: 'api', type: 'openapi', prefix: '/v1', apiKeys: [] }]);
      expect(config.routing).toMatchObject({
        default: 'echo',
        rules: [{ name: 'drop-ads', pipeline: '__discard__' }],
      });
    });
  });

  describe('when loading the examples', () => {
    it('parses every file in config/examples', async () => {
      const files = (await readdir(join(CONFIG_DIR, 'examples'))).filter((file) => file.endsWith('.yaml'));
      expect(files.sort()).toEqual([
        'agent-workers.yaml',
        'cluster.yaml',
        'debounce.yaml',
        'discord.yaml',
        'feishu.yaml',
        'line.yaml',
        'multi-pipeline.yaml',
        'slack.yaml',
        'teams.yaml',
        'telegram.yaml',
        'whatsapp.yaml',
      ]);
      for (const file of files) {
        await expect(
          loadConfig(join(CONFIG_DIR, 'examples', file), { env: EXAMPLE_ENV }),
        ).resolves.toBeDefined();
      }
    });

    it('takes secrets from the environment', async () => {
      const cluster = await loadConfig(join(CONFIG_DIR, 'examples', 'cluster.yaml'), { env: EXAMPLE_ENV });
      expect(cluster.store).toEqual({
        kind: 'redis',
        url: EXAMPLE_ENV.REDIS_URL,
        prefix: 'switchboard',
        wait_replicas: 0,
        wait_timeout: 500,
        partitions: 1,
      });
      expect(cluster.audit).toMatchObject({
        kind: 'postgres',
        url: EXAMPLE_ENV.DATABASE_URL,
        storeText: 500,
      });
      const telegram = await loadConfig(join(CONFIG_DIR, 'examples', 'telegram.yaml'), { env: EXAMPLE_ENV });
      expect(telegram.channels[0]).toMatchObject({ token: EXAMPLE_ENV.TELEGRAM_BOT_TOKEN, mode: 'polling' });
      const line = await loadConfig(join(CONFIG_DIR, 'examples', 'line.yaml'), { env: EXAMPLE_ENV });
      expect(line.channels[0]).toMatchObject({
        channelSecret: EXAMPLE_ENV.LINE_CHANNEL_SECRET,
        channelAccessToken: EXAMPLE_ENV.LINE_CHANNEL_ACCESS_TOKEN,
        webhookRedelivery: false,
      });
      const whatsapp = await loadConfig(join(CONFIG_DIR, 'examples', 'whatsapp.yaml'), { env: EXAMPLE_ENV });
      expect(whatsapp.channels[0]).toMatchObject({
        phoneNumberId: EXAMPLE_ENV.WHATSAPP_PHONE_NUMBER_ID,
        accessToken: EXAMPLE_ENV.WHATSAPP_ACCESS_TOKEN,
        appSecret: EXAMPLE_ENV.WHATSAPP_APP_SECRET,
        verifyToken: EXAMPLE_ENV.WHATSAPP_VERIFY_TOKEN,
        apiUrl: 'https://graph.facebook.com',
        apiVersion: 'v21.0',
      });
      const teams = await loadConfig(join(CONFIG_DIR, 'examples', 'teams.yaml'), { env: EXAMPLE_ENV });
      expect(teams.channels[0]).toMatchObject({
        appId: EXAMPLE_ENV.TEAMS_APP_ID,
        appPassword: EXAMPLE_ENV.TEAMS_APP_PASSWORD,
        openIdMetadataUrl: 'https://login.botframework.com/v1/.well-known/openidconfiguration',
        tokenUrl: 'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
      });
    });

    it('refuses an example whose variables are unset, naming them', async () => {
      await expect(loadConfig(join(CONFIG_DIR, 'examples', 'slack.yaml'), { env: {} })).rejects.toMatchObject(
        {
          code: 'SB_CONFIG_VARIABLE_MISSING',
          details: {
            problems: [
              'channels[0].bot_token: environment variable SLACK_BOT_TOKEN is not set',
              'channels[0].signing_secret: environment variable SLACK_SIGNING_SECRET is not set',
              'pipelines[0].api_key: environment variable OPENAI_API_KEY is not set',
            ],
          },
        },
      );
    });
  });
});
