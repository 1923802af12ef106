import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeDiscord, startFakeDiscord } from '@switchboard/testkit/discord';
import { type FakeFeishu, startFakeFeishu } from '@switchboard/testkit/feishu';
import { type FakeLine, startFakeLine } from '@switchboard/testkit/line';
import { postgresReachable, queryPostgres } from '@switchboard/testkit/postgres';
import { poolKeyNames, redisReachable, startPrivateRedis } from '@switchboard/testkit/redis';
import { type FakeSlack, startFakeSlack } from '@switchboard/testkit/slack';
import { type FakeTeams, startFakeTeams } from '@switchboard/testkit/teams';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir, useCleanups, writeConfig } from './serve-process.js';
import { type SharedStores, newStores, storesConfig } from './shared-stores.js';

// `switchboard doctor` against every platform's fake, a pipeline endpoint of the test's own and
// the shared Redis and PostgreSQL: each check passes or names what is wrong, and nothing is ever
// sent to a chat nor posted to a pipeline.

const reachable = (await redisReachable()) && (await postgresReachable());

/** One entry of `doctor --json`. */
interface Check {
  name: string;
  ok: boolean;
  level: 'ok' | 'warn' | 'fail';
  detail: string;
  hint: string | null;
}

/** A pipeline endpoint that records the method of every request it gets. */
async function startEndpoint(): Promise<{ url: string; methods: string[]; server: Server }> {
  const methods: string[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    methods.push(request.method ?? '');
    response.writeHead(405).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/turn`, methods, server };
}

/** A loopback port nothing listens on: one just bound and released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.skipIf(!reachable)('switchboard doctor', () => {
  const cleanup = useCleanups();
  let telegram: FakeTelegram;
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let line: FakeLine;
  let whatsapp: FakeWhatsApp;
  let teams: FakeTeams;
  let feishu: FakeFeishu;
  let endpoint: Awaited<ReturnType<typeof startEndpoint>>;
  let stores: SharedStores;

  beforeAll(async () => {
    [telegram, slack, discord, line, whatsapp, teams, feishu, endpoint] = await Promise.all([
      startFakeTelegram(),
      startFakeSlack(),
      startFakeDiscord(),
      startFakeLine(),
      startFakeWhatsApp(),
      startFakeTeams(),
      startFakeFeishu(),
      startEndpoint(),
    ]);
    stores = newStores();
  });
  afterEach(() => telegram.setWebhookError(null));
  afterAll(async () => {
    await Promise.all([
      telegram.close(),
      slack.close(),
      discord.close(),
      line.close(),
      whatsapp.close(),
      teams.close(),
      feishu.close(),
      new Promise((resolve) => endpoint.server.close(resolve)),
    ]);
  });

  /** Every channel type against its fake, with the Telegram token and Redis URL replaceable. */
  function config(options: { telegramToken?: string; pipelineUrl?: string; redisUrl?: string } = {}) {
    return storesConfig(
      { ...stores, redisUrl: options.redisUrl ?? stores.redisUrl },
      `channels:
  - { id: api, type: openapi }
  - id: tg
    type: telegram
    token: "\${DOCTOR_TELEGRAM_TOKEN}"
    mode: webhook
    webhook: { secret_token: doctor-secret, url: "https://bot.example.test/telegram/tg" }
    api_root: "${telegram.url}"
  - { id: sl, type: slack, bot_token: xoxb-test, signing_secret: slack-secret, api_url: "${slack.apiUrl}" }
  - { id: dc, type: discord, token: "${discord.token}", api_url: "${discord.url}" }
  - id: ln
    type: line
    channel_secret: ${line.channelSecret}
    channel_access_token: ${line.channelAccessToken}
    api_url: "${line.url}"
  - id: wa
    type: whatsapp
    phone_number_id: "${whatsapp.phoneNumberId}"
    access_token: ${whatsapp.accessToken}
    app_secret: ${whatsapp.appSecret}
    verify_token: ${whatsapp.verifyToken}
    api_url: "${whatsapp.url}"
  - id: ms
    type: teams
    app_id: "${teams.appId}"
    app_password: ${teams.appPassword}
    openid_metadata_url: "${teams.openIdMetadataUrl}"
    token_url: "${teams.tokenUrl}"
  - id: fs
    type: feishu
    app_id: ${feishu.appId}
    app_secret: ${feishu.appSecret}
    verification_token: ${feishu.verificationToken}
    domain: "${feishu.url}"
pipelines:
  - { id: echo, type: echo }
  - { id: bot, type: http, url: "${options.pipelineUrl ?? endpoint.url}" }
routing: { default: bot }
`,
    );
  }

  /** `switchboard doctor -c <yaml> ...flags`, the Telegram token given through its variable. */
  function doctor(yaml: string, flags: string[] = [], telegramToken = telegram.token) {
    const dir = tempDir();
    return runCli(['doctor', '-c', writeConfig(dir, yaml), ...flags], {
      cwd: dir,
      env: { DOCTOR_TELEGRAM_TOKEN: telegramToken },
    });
  }

  /** Nothing but the platforms' read-only identity calls reached the fakes: no message, no edit. */
  function expectOnlyIdentityCalls() {
    expect(new Set(telegram.calls.map((call) => call.method))).toEqual(new Set(['getMe', 'getWebhookInfo']));
    expect(telegram.sentMessages()).toEqual([]);
    expect(new Set(slack.calls.map((call) => call.method))).toEqual(new Set(['auth.test']));
    expect(new Set(discord.requests.map((request) => `${request.method} ${request.path}`))).toEqual(
      new Set(['GET /users/@me']),
    );
    expect(discord.sentMessages()).toEqual([]);
    expect(new Set(line.calls.map((call) => call.endpoint))).toEqual(new Set(['info']));
    expect(new Set(whatsapp.calls.map((call) => `${call.method} ${call.path}`))).toEqual(
      new Set([`GET /v21.0/${whatsapp.phoneNumberId}`]),
    );
    expect(whatsapp.sent()).toEqual([]);
    expect(teams.calls).toEqual([]);
    expect(new Set(feishu.calls.map((call) => call.endpoint))).toEqual(new Set(['token']));
    expect(endpoint.methods.filter((method) => method !== 'HEAD')).toEqual([]);
  }

  describe('when every part answers', () => {
    it('passes every check, one line each, exits 0, and sends nothing anywhere', async () => {
      const result = await doctor(config());
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const lines = result.stdout.split('\n');
      for (const name of ['config', 'channels.api', 'channels.ms', 'pipelines.echo', 'store.redis'])
        expect(lines.some((line) => line.startsWith(`✓ ${name} `))).toBe(true);
      expect(result.stdout).toMatch(/^✓ channels\.tg +Telegram bot @switchboard_bot/m);
      expect(result.stdout).toMatch(/^✓ channels\.sl +Slack bot @/m);
      expect(result.stdout).toMatch(/^✓ pipelines\.bot +reachable: .* HTTP 405/m);
      expect(result.stdout).toMatch(/^✓ store\.redis\.eviction +maxmemory-policy noeviction/m);
      expect(result.stdout).toMatch(/^✓ audit\.postgres +/m);
      expect(result.stdout).not.toMatch(/^✗/m);
      expect(endpoint.methods).toContain('HEAD');
      expectOnlyIdentityCalls();
    });

    it('prints the checks as JSON with --json, each ok, and leaves no key nor schema behind', async () => {
      const result = await doctor(config(), ['--json']);
      expect(result.code).toBe(0);
      const checks = JSON.parse(result.stdout) as Check[];
      expect(checks.map((check) => check.name)).toEqual(
        expect.arrayContaining([
          'config',
          ...['api', 'tg', 'sl', 'dc', 'ln', 'wa', 'ms', 'fs'].map((id) => `channels.${id}`),
          'pipelines.echo',
          'pipelines.bot',
          'store.redis',
          'store.redis.eviction',
          'store.redis.persistence',
          'store.redis.clock',
          'audit.postgres',
        ]),
      );
      for (const check of checks) {
        expect(check, check.name).toMatchObject({ ok: true });
        expect(typeof check.detail).toBe('string');
        expect(check.hint === null || typeof check.hint === 'string').toBe(true);
      }
      const redis = new Redis(stores.redisUrl);
      cleanup(async () => redis.disconnect());
      expect(await poolKeyNames(redis, stores.prefix)).toEqual([]);
      const schemas = await queryPostgres('SELECT 1 FROM pg_namespace WHERE nspname = $1', [stores.schema]);
      expect(schemas).toEqual([]);
      expectOnlyIdentityCalls();
    });
  });

  describe('when a channel token is wrong', () => {
    it('names the channel, the refusal and the credential to check, and exits 1', async () => {
      const result = await doctor(config(), [], '123456789:wrong-token');
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(
        /^✗ channels\.tg +Telegram rejected the bot token \(HTTP 401: Unauthorized\) — hint: check channels\[1\]\.token/m,
      );
      expect(result.stdout).not.toContain('wrong-token');
      expect(result.stdout).toMatch(/^✓ channels\.sl /m);
    });
  });

  describe('when Telegram could not deliver to the webhook', () => {
    it("reports Telegram's last error with a hint, and exits 1", async () => {
      telegram.setWebhookError('Connection refused');
      const result = await doctor(config(), ['--json']);
      expect(result.code).toBe(1);
      const check = (JSON.parse(result.stdout) as Check[]).find((entry) => entry.name === 'channels.tg');
      expect(check).toMatchObject({ ok: false, level: 'fail' });
      expect(check?.detail).toContain('Connection refused');
      expect(check?.hint).toMatch(/webhook URL/);
    });
  });

  describe('when a pipeline is unreachable', () => {
    it('names the pipeline, the refused connection and its URL, and exits 1', async () => {
      const port = await closedPort();
      const result = await doctor(config({ pipelineUrl: `http://127.0.0.1:${port}/turn` }));
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(
        new RegExp(
          `^✗ pipelines\\.bot +unreachable: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(http://127\\.0\\.0\\.1:${port}/turn\\) — hint: `,
          'm',
        ),
      );
      expect(result.stdout).toMatch(/^✓ pipelines\.echo /m);
    });
  });

  describe('when Redis may evict keys', () => {
    it('names the eviction policy with a hint, and exits 1', { timeout: 30_000 }, async () => {
      const redis = await startPrivateRedis([
        '--maxmemory-policy',
        'allkeys-lru',
        '--save',
        '',
        '--appendonly',
        'no',
      ]);
      cleanup(() => redis.remove());
      const result = await doctor(config({ redisUrl: redis.url }), ['--json']);
      expect(result.code).toBe(1);
      const checks = JSON.parse(result.stdout) as Check[];
      const failed = checks.filter((check) => !check.ok).map((check) => check.name);
      expect(failed).toEqual(['store.redis.eviction']);
      const eviction = checks.find((check) => check.name === 'store.redis.eviction');
      expect(eviction?.detail).toMatch(/maxmemory-policy is allkeys-lru/);
      expect(eviction?.hint).toMatch(/noeviction/);
      // No append-only file and no snapshots: a warning, not a failure.
      expect(checks.find((check) => check.name === 'store.redis.persistence')).toMatchObject({
        ok: true,
        level: 'warn',
      });
    });
  });
});
