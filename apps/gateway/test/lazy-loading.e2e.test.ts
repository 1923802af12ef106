import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeFeishu } from '@switchboard/testkit/feishu';
import { startFakeLine } from '@switchboard/testkit/line';
import { startFakeTeams } from '@switchboard/testkit/teams';
import { startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { describe, expect, it } from 'vitest';
import { runCli, startServe, tempDir, testConfig, writeConfig } from './serve-process.js';

const RECORDER = fileURLToPath(new URL('./record-imports.mjs', import.meta.url));

/** The HTTP channel and the echo pipeline alone: the quick start's shape. */
const HTTP_ONLY = `channels: [{ id: api, type: openapi }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;

/** Libraries only a platform, pipeline type, store or setting that this config does not name needs. */
const UNCONFIGURED = [
  'grammy',
  '@slack/bolt',
  'discord.js',
  '@line/bot-sdk',
  '@larksuiteoapi/node-sdk',
  'axios',
  // The JWT checks of Teams' activities (channel-kit's `./jwt`).
  'jose',
  'undici',
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
  'pino-pretty',
  're2js',
  'pg',
  'ioredis',
];

/**
 * What only a request needs: the API docs' page (Swagger UI, the static file server of its
 * assets) or a scrape of /metrics (prom-client).
 */
const ON_REQUEST = ['@fastify/swagger-ui', '@fastify/static', 'glob', 'prom-client'];

/** What a CLI verb that does not serve has no use for. */
const SERVER_ONLY = ['fastify', '@fastify/swagger', '@fastify/swagger-ui', 'prom-client', 'better-sqlite3'];

/** The npm packages each file of the gateway's bundle holds, as its build wrote them. */
const BUNDLE = new URL('../dist/', import.meta.url);
const packagesByBundleFile: Record<string, string[]> = JSON.parse(
  readFileSync(new URL('chunk-packages.json', BUNDLE), 'utf8'),
);

/** The npm packages a loaded module holds: one from node_modules, those of a bundle file. */
function packagesOf(loaded: string): string[] {
  const fromNodeModules = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(loaded)?.[1];
  if (fromNodeModules !== undefined) return [fromNodeModules];
  const bundled = loaded.replace(/^file:\/\//, '').startsWith(fileURLToPath(BUNDLE));
  return bundled ? (packagesByBundleFile[loaded.slice(loaded.lastIndexOf('/') + 1)] ?? []) : [];
}

/** Runs the process with the recorder and returns a check of which npm packages it loaded. */
function recording(dir: string) {
  const file = join(dir, 'loaded.txt');
  return {
    env: { NODE_OPTIONS: `--import ${RECORDER}`, RECORD_IMPORTS_TO: file, LOG_FORMAT: 'json' },
    loaded(): Set<string> {
      return new Set(readFileSync(file, 'utf8').split('\n').flatMap(packagesOf));
    },
  };
}

describe('what a process loads', () => {
  describe('when serve runs the HTTP channel alone, JSON logs and no tracing', () => {
    it('loads fastify and SQLite but no platform library, pipeline HTTP client, OTel API, pino-pretty, other database client, Swagger UI or prom-client', async () => {
      const dir = tempDir();
      const record = recording(dir);
      const gateway = await startServe({
        dir,
        configPath: writeConfig(dir, testConfig(dir, HTTP_ONLY)),
        env: { ...record.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' },
      });
      expect(await gateway.stop()).toBe(0);

      const loaded = record.loaded();
      // The recorder sees what the gateway needs: an empty list would prove nothing.
      expect(loaded).toContain('fastify');
      expect(loaded).toContain('better-sqlite3');
      expect([...UNCONFIGURED, ...ON_REQUEST].filter((name) => loaded.has(name))).toEqual([]);
    });

    it('loads Swagger UI only once the docs page is asked for, and serves it then (HEAD too; unknown assets 404 in the gateway shape)', async () => {
      const dir = tempDir();
      const record = recording(dir);
      const gateway = await startServe({
        dir,
        configPath: writeConfig(dir, testConfig(dir, HTTP_ONLY)),
        env: record.env,
      });
      const openapi = await fetch(`${gateway.url}/openapi.json`);
      expect(openapi.status).toBe(200);
      // Imported ES modules are recorded as they load (CommonJS ones only at exit).
      const before = record.loaded();
      expect(before).toContain('@fastify/swagger');
      expect(before).not.toContain('@fastify/swagger-ui');

      const page = await fetch(`${gateway.url}/docs/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('swagger-initializer.js');
      const stylesheet = await fetch(`${gateway.url}/docs/static/swagger-ui.css`);
      expect(stylesheet.status).toBe(200);
      expect(stylesheet.headers.get('content-type')).toContain('text/css');
      const head = await fetch(`${gateway.url}/docs/static/swagger-ui.css`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(stylesheet.headers.get('content-length'));
      expect(Number(head.headers.get('content-length'))).toBeGreaterThan(0);
      const unknown = await fetch(`${gateway.url}/docs/static/no-such-file.js`);
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ error: { code: 'SB_HTTP_NOT_FOUND' } });
      expect(await gateway.stop()).toBe(0);
      expect(record.loaded()).toContain('@fastify/swagger-ui');
    });
  });

  describe('when serve runs a LINE channel', () => {
    it('loads no other platform library, and not the LINE SDK either: the channel uses its types only', async () => {
      const fake = await startFakeLine();
      try {
        const dir = tempDir();
        const record = recording(dir);
        const line = `channels: [{ id: ln, type: line, channel_secret: ${fake.channelSecret}, channel_access_token: ${fake.channelAccessToken}, api_url: "${fake.url}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
        const gateway = await startServe({
          dir,
          configPath: writeConfig(dir, testConfig(dir, line)),
          env: record.env,
        });
        expect(await gateway.stop()).toBe(0);
        // The channel started: it asked LINE who the bot is.
        expect(fake.callsTo('info')).toHaveLength(1);
        const loaded = record.loaded();
        expect(loaded).toContain('fastify');
        expect(UNCONFIGURED.filter((name) => loaded.has(name))).toEqual([]);
      } finally {
        await fake.close();
      }
    });
  });

  describe('when serve runs a WhatsApp channel', () => {
    it('loads no platform library: the Cloud API is plain JSON over fetch', async () => {
      const fake = await startFakeWhatsApp();
      try {
        const dir = tempDir();
        const record = recording(dir);
        const whatsapp = `channels: [{ id: wa, type: whatsapp, phone_number_id: "${fake.phoneNumberId}", access_token: ${fake.accessToken}, app_secret: ${fake.appSecret}, verify_token: ${fake.verifyToken}, api_url: "${fake.url}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
        const gateway = await startServe({
          dir,
          configPath: writeConfig(dir, testConfig(dir, whatsapp)),
          env: record.env,
        });
        // The channel is mounted: it answers Meta's verification of the callback URL.
        expect((await fake.verifySubscription(`${gateway.url}/whatsapp/wa`)).status).toBe(200);
        expect(await gateway.stop()).toBe(0);
        const loaded = record.loaded();
        expect(loaded).toContain('fastify');
        expect(UNCONFIGURED.filter((name) => loaded.has(name))).toEqual([]);
      } finally {
        await fake.close();
      }
    });
  });

  describe('when serve runs a Teams channel', () => {
    it('loads jose for its JWT checks and no other platform library', async () => {
      const fake = await startFakeTeams();
      try {
        const dir = tempDir();
        const record = recording(dir);
        const teams = `channels: [{ id: ms, type: teams, app_id: "${fake.appId}", app_password: ${fake.appPassword}, openid_metadata_url: "${fake.openIdMetadataUrl}", token_url: "${fake.tokenUrl}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
        const gateway = await startServe({
          dir,
          configPath: writeConfig(dir, testConfig(dir, teams)),
          env: record.env,
        });
        expect(await gateway.stop()).toBe(0);
        // The channel started: it fetched its token.
        expect(fake.tokensIssued()).toBe(1);
        const loaded = record.loaded();
        expect(loaded).toContain('jose');
        expect(UNCONFIGURED.filter((name) => name !== 'jose' && loaded.has(name))).toEqual([]);
      } finally {
        await fake.close();
      }
    });
  });

  describe('when serve runs a Feishu channel', () => {
    it('loads the Lark SDK (and its HTTP client), and no other platform library', async () => {
      const fake = await startFakeFeishu();
      try {
        const dir = tempDir();
        const record = recording(dir);
        const feishu = `channels: [{ id: fs, type: feishu, app_id: ${fake.appId}, app_secret: ${fake.appSecret}, encrypt_key: ${fake.encryptKey}, domain: "${fake.url}" }]
pipelines: [{ id: echo, type: echo }]
routing: { default: echo }
`;
        const gateway = await startServe({
          dir,
          configPath: writeConfig(dir, testConfig(dir, feishu)),
          env: record.env,
        });
        expect(await gateway.stop()).toBe(0);
        // The channel started: it asked Feishu who the bot is.
        expect(fake.callsTo('bot_info')).toHaveLength(1);
        const loaded = record.loaded();
        expect(loaded).toContain('@larksuiteoapi/node-sdk');
        const FEISHU_ONLY = ['@larksuiteoapi/node-sdk', 'axios'];
        expect(UNCONFIGURED.filter((name) => !FEISHU_ONLY.includes(name) && loaded.has(name))).toEqual([]);
      } finally {
        await fake.close();
      }
    });
  });

  describe.each([
    ['--help'],
    ['config check'],
    ['route --channel api --chat-type person --chat-id 1 --text hello'],
  ])('when the CLI runs `%s`', (command) => {
    it('loads neither the HTTP server nor a store, a platform or a pipeline library', async () => {
      const dir = tempDir();
      const record = recording(dir);
      const configPath = writeConfig(dir, testConfig(dir, HTTP_ONLY));
      const result = await runCli([...command.split(' '), '-c', configPath], { cwd: dir, env: record.env });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);

      const loaded = record.loaded();
      expect(loaded).toContain('zod');
      expect([...SERVER_ONLY, ...UNCONFIGURED].filter((name) => loaded.has(name))).toEqual([]);
    });
  });
});
