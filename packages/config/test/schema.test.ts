// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} strings are the syntax under test, not templates
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../src/schema.js';

const chat = { id: 'c', token: 't' };

describe('ConfigSchema', () => {
  describe('when the document is empty', () => {
    const config = ConfigSchema.parse({});

    it('defaults server, admin, store, audit and shutdown', () => {
      expect(config.server).toEqual({
        host: '0.0.0.0',
        port: 8080,
        bodyLimitBytes: 1_048_576,
        trustProxy: false,
        requestTimeoutMs: 30_000,
        maxConnections: 10_000,
        maxMediaDownloads: 64,
      });
      expect(config.admin).toEqual({ token: undefined, tokens: [], protect: [] });
      expect(config.handoff).toEqual({ idleTimeoutMs: 1_800_000, idleResume: 'bot', maxEntries: 500 });
      expect(config.store).toEqual({ kind: 'sqlite', path: './data/switchboard.db' });
      expect(config.audit).toEqual({
        kind: 'sqlite',
        retentionDays: 30,
        storeText: 'full',
        recordIgnored: false,
      });
      expect(config.shutdown).toEqual({ drainTimeoutMs: 30_000 });
    });

    it('defaults concurrency and queue through the core schemas', () => {
      expect(config.concurrency).toEqual({ global: 20, perSession: 1 });
      expect(config.queue).toEqual({ maxPending: 10_000, maxPendingPerSession: 500 });
    });

    it('runs the quick start: an openapi channel, an echo pipeline, routing to echo', () => {
      expect(config.channels).toEqual([
        {
          id: 'api',
          type: 'openapi',
          prefix: '/v1',
          maxConcurrentRequests: 100,
          apiKeys: [],
          waitTimeoutMs: 30_000,
          maxWaitTimeoutMs: 120_000,
          outbound: {
            sendTimeoutMs: 30_000,
            editIntervalMs: 1_000,
            concurrency: 64,
            maxAgeMs: 3_600_000,
            retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
            typing: true,
            allowPrivateUrls: false,
          },
          maxEventStreams: 1000,
          maxEventStreamsPerSession: 10,
          maxEventStreamBufferBytes: 1_048_576,
          maxEventStreamBufferTotalBytes: 67_108_864,
        },
      ]);
      expect(config.pipelines).toEqual([
        {
          id: 'echo',
          type: 'echo',
          options: { type: 'echo' },
          policy: {
            id: 'echo',
            timeoutMs: 120_000,
            maxConcurrency: Number.POSITIVE_INFINITY,
            aggregation: { enabled: false, delayMs: 1500, maxWaitMs: 7500, maxMessages: 10 },
            busyMode: 'queue',
            retry: { maxAttempts: 10, baseDelayMs: 5000, maxDelayMs: 300_000 },
            deadLetterReply: undefined,
          },
        },
      ]);
      expect(config.routing).toEqual({ default: 'echo', rules: [] });
    });
  });

  describe('when a section leaves its kind out', () => {
    it('means sqlite for store and audit', () => {
      const config = ConfigSchema.parse({ store: { path: '/var/lib/sb.db' }, audit: { retention_days: 7 } });
      expect(config.store).toEqual({ kind: 'sqlite', path: '/var/lib/sb.db' });
      expect(config.audit).toMatchObject({ kind: 'sqlite', retentionDays: 7 });
    });
  });

  describe('when other backends are chosen', () => {
    it('keeps their urls', () => {
      const config = ConfigSchema.parse({
        store: { kind: 'redis', url: 'redis://127.0.0.1:6379/0' },
        audit: { kind: 'postgres', url: 'postgres://127.0.0.1/test', store_text: 200, ignored: true },
      });
      expect(config.store).toEqual({
        kind: 'redis',
        url: 'redis://127.0.0.1:6379/0',
        prefix: 'switchboard',
        wait_replicas: 0,
        wait_timeout: 500,
        partitions: 1,
      });
      expect(config.audit).toEqual({
        kind: 'postgres',
        url: 'postgres://127.0.0.1/test',
        schema: 'switchboard',
        outboxMaxEntries: 100_000,
        retentionDays: 30,
        storeText: 200,
        recordIgnored: true,
      });
    });

    it('refuses a redis prefix that would break the key hash tag, naming store.prefix', () => {
      const result = ConfigSchema.safeParse({
        store: { kind: 'redis', url: 'redis://127.0.0.1', prefix: 'a}b' },
        audit: { kind: 'postgres', url: 'postgres://127.0.0.1/test' },
      });
      expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['store.prefix']);
    });

    it('keeps an audit file apart from the store file', () => {
      const config = ConfigSchema.parse({ audit: { path: './audit.db' } });
      expect(config.audit).toMatchObject({ kind: 'sqlite', path: './audit.db' });
    });

    it('refuses a redis store without postgres audit, naming audit.kind', () => {
      for (const audit of [undefined, { kind: 'sqlite' as const, path: './audit.db' }]) {
        const result = ConfigSchema.safeParse({ store: { kind: 'redis', url: 'redis://127.0.0.1' }, audit });
        expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
          [
            'audit.kind',
            'store.kind redis needs audit.kind postgres (replicas sharing a pool share its audit log, statuses and history)',
          ],
        ]);
      }
    });

    it('takes postgres or sqlite audit with a sqlite or memory store', () => {
      for (const store of [{ kind: 'sqlite' as const }, { kind: 'memory' as const }]) {
        for (const audit of [
          { kind: 'sqlite' as const },
          { kind: 'postgres' as const, url: 'postgres://db/sb' },
        ]) {
          expect(ConfigSchema.parse({ store, audit }).audit.kind).toBe(audit.kind);
        }
      }
    });

    it('takes a postgres schema name and refuses one that is not a plain identifier, naming audit.schema', () => {
      const audit = { kind: 'postgres' as const, url: 'postgres://db/sb' };
      expect(ConfigSchema.parse({ audit: { ...audit, schema: 'tenant_a' } }).audit).toMatchObject({
        schema: 'tenant_a',
      });
      for (const schema of ['Tenant', '1st', 'a-b', 'x'.repeat(64)]) {
        const result = ConfigSchema.safeParse({ audit: { ...audit, schema } });
        expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['audit.schema']);
      }
    });

    it('refuses postgres audit without a url', () => {
      const result = ConfigSchema.safeParse({ audit: { kind: 'postgres' } });
      expect(result.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['audit.url']);
    });
  });

  describe('when numbers arrive as strings from ${VAR}', () => {
    it('coerces numeric strings where a number is expected', () => {
      const config = ConfigSchema.parse({
        server: { port: '9000', body_limit: ' 2048 ' },
        audit: { retention_days: '14', store_text: '300' },
        channels: [{ id: 'api', type: 'openapi', max_concurrent_requests: '5' }],
      });
      expect(config.server).toMatchObject({ port: 9000, bodyLimitBytes: 2048 });
      expect(config.audit).toMatchObject({ retentionDays: 14, storeText: 300 });
      expect(config.channels[0]).toMatchObject({ maxConcurrentRequests: 5 });
    });

    it('refuses text, an empty string and booleans instead of reading them as 0 or 1', () => {
      for (const port of ['eighty', '', true]) {
        expect(ConfigSchema.safeParse({ server: { port } }).success).toBe(false);
      }
    });
  });

  describe('when server.request_timeout is set', () => {
    it('converts it to milliseconds and refuses one under a second (0 would disable it)', () => {
      expect(ConfigSchema.parse({ server: { request_timeout: '5s' } }).server.requestTimeoutMs).toBe(5000);
      const refused = ConfigSchema.safeParse({ server: { request_timeout: '0s' } });
      expect(refused.error?.issues[0]).toMatchObject({
        path: ['server', 'request_timeout'],
        message: 'must be at least 1s',
      });
    });
  });

  describe('when server.max_connections is set', () => {
    it('takes a count from 1 to 1 000 000 and refuses 0, which would leave descriptors unbounded', () => {
      const maxConnections = (max_connections: unknown) =>
        ConfigSchema.safeParse({ server: { max_connections } }).data?.server.maxConnections;
      expect(maxConnections(500)).toBe(500);
      expect(maxConnections(0)).toBeUndefined();
      expect(maxConnections(2_000_000)).toBeUndefined();
    });
  });

  describe('when the admin token is empty', () => {
    it('means no token', () => {
      expect(ConfigSchema.parse({ admin: { token: '' } }).admin.token).toBeUndefined();
      expect(ConfigSchema.parse({ admin: { token: 's3cret' } }).admin.token).toBe('s3cret');
    });
  });

  describe('when server.trust_proxy is set', () => {
    it('keeps true, false and a list of addresses, CIDR ranges and named ranges', () => {
      const trustProxy = (trust_proxy: unknown) =>
        ConfigSchema.parse({ server: { trust_proxy } }).server.trustProxy;
      expect(trustProxy(true)).toBe(true);
      expect(trustProxy(false)).toBe(false);
      const list = ['loopback', '10.0.0.5', '10.0.0.0/8', 'fd00::/8', '::1'];
      expect(trustProxy(list)).toEqual(list);
    });

    it('names each entry that is not an address or range, and refuses an empty list or a hop count', () => {
      const issues = (trust_proxy: unknown) =>
        ConfigSchema.safeParse({ server: { trust_proxy } }).error?.issues.map((issue) =>
          issue.path.join('.'),
        );
      expect(issues(['10.0.0.0/33', 'proxy.local', '127.0.0.1', '1.2.3.4/8/1'])).toEqual([
        'server.trust_proxy.0',
        'server.trust_proxy.1',
        'server.trust_proxy.3',
      ]);
      expect(issues([])).toEqual(['server.trust_proxy']);
      expect(issues(1)).toEqual(['server.trust_proxy']);
    });
  });

  describe('when admin.protect lists operations endpoints', () => {
    it('keeps metrics, readyz and docs, and refuses healthz', () => {
      const protect = ['metrics', 'readyz', 'docs'];
      expect(ConfigSchema.parse({ admin: { protect } }).admin.protect).toEqual(protect);
      expect(ConfigSchema.safeParse({ admin: { protect: ['healthz'] } }).success).toBe(false);
    });
  });

  describe('when chat channels are configured', () => {
    it('gives each a channel policy with the group defaults and chat-scoped sessions', () => {
      const config = ConfigSchema.parse({
        channels: [
          { ...chat, type: 'telegram' },
          { id: 's', type: 'slack', bot_token: 'b', signing_secret: 's', session_scope: 'thread' },
          { id: 'd', token: 't', type: 'discord', group: { prefixes: ['!'] } },
        ],
      });
      expect(config.channels.map((channel) => ('policy' in channel ? channel.policy : null))).toEqual([
        { admission: { require_mention: true, prefixes: [] }, sessionScope: 'chat' },
        { admission: { require_mention: true, prefixes: [] }, sessionScope: 'thread' },
        { admission: { require_mention: true, prefixes: ['!'] }, sessionScope: 'chat' },
      ]);
    });

    it('gives every channel type an edit interval for streamed answers: 1 s by default, between 100ms and 1m', () => {
      const config = ConfigSchema.parse({
        channels: [
          { id: 'a', type: 'openapi', outbound: { edit_interval: '250ms' } },
          { ...chat, type: 'telegram' },
        ],
      });
      expect(config.channels.map((channel) => channel.outbound.editIntervalMs)).toEqual([250, 1_000]);
      const bad = ConfigSchema.safeParse({
        channels: [{ ...chat, type: 'telegram', outbound: { edit_interval: '50ms' } }],
      });
      expect(bad.success).toBe(false);
      expect(bad.error?.issues.map((issue) => issue.path.join('.'))).toEqual([
        'channels.0.outbound.edit_interval',
      ]);
    });

    it('gives every channel an outbox policy: 64 chats at once, 1 h max age, retries from 1 s to 1 min', () => {
      const config = ConfigSchema.parse({
        channels: [
          { id: 'a', type: 'openapi' },
          {
            id: 'd',
            type: 'discord',
            token: 't',
            outbound: { concurrency: 2, max_age: '10m', retry: { base_delay: '500ms', max_delay: '5s' } },
          },
        ],
      });
      expect(config.channels.map((channel) => channel.outbound)).toEqual([
        {
          sendTimeoutMs: 30_000,
          editIntervalMs: 1_000,
          concurrency: 64,
          maxAgeMs: 3_600_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
          typing: true,
          allowPrivateUrls: false,
        },
        {
          sendTimeoutMs: 30_000,
          editIntervalMs: 1_000,
          concurrency: 2,
          maxAgeMs: 600_000,
          retry: { baseDelayMs: 500, maxDelayMs: 5_000 },
          typing: true,
          allowPrivateUrls: false,
          // Discord's pacing defaults: 'paces each chat platform by its documented limits'.
          rate: expect.objectContaining({ enabled: false }),
        },
      ]);
      const bad = ConfigSchema.safeParse({
        channels: [{ id: 'a', type: 'openapi', outbound: { concurrency: 0, max_age: '100ms' } }],
      });
      expect(bad.error?.issues.map((issue) => issue.path.join('.'))).toEqual([
        'channels.0.outbound.concurrency',
        'channels.0.outbound.max_age',
      ]);
    });

    it('gives every channel type a send deadline: 30 s by default, between 1s and 10m', () => {
      const config = ConfigSchema.parse({
        channels: [
          { id: 'a', type: 'openapi', outbound: { send_timeout: '1s' } },
          { ...chat, type: 'telegram' },
          { id: 's', type: 'slack', bot_token: 'b', signing_secret: 's', outbound: { send_timeout: '10m' } },
          { id: 'd', type: 'discord', token: 't', outbound: { send_timeout: 2500 } },
        ],
      });
      expect(config.channels.map((channel) => channel.outbound.sendTimeoutMs)).toEqual([
        1_000, 30_000, 600_000, 2_500,
      ]);
      const bad = ConfigSchema.safeParse({
        channels: [
          { ...chat, type: 'telegram', outbound: { send_timeout: '500ms' } },
          { id: 'd', type: 'discord', token: 't', outbound: { send_timeout: '11m' } },
          { id: 'a', type: 'openapi', outbound: { send_timout: '5s' } },
        ],
      });
      expect(bad.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
        ['channels.0.outbound.send_timeout', 'must be between 1s and 10m'],
        ['channels.1.outbound.send_timeout', 'must be between 1s and 10m'],
        ['channels.2.outbound', 'Unrecognized key: "send_timout"'],
      ]);
    });

    it('paces each chat platform by its documented limits unless outbound.rate says otherwise', () => {
      const config = ConfigSchema.parse({
        channels: [
          { ...chat, type: 'telegram' },
          { id: 's', type: 'slack', bot_token: 'b', signing_secret: 's' },
          { id: 'd', type: 'discord', token: 't' },
          {
            id: 't2',
            type: 'telegram',
            token: 't',
            outbound: { rate: { per_bot: { limit: '10', per: '2s' }, per_group: null } },
          },
          { id: 'd2', type: 'discord', token: 't', outbound: { rate: { enabled: true, per_chat: null } } },
        ],
      });
      const second = (limit: number, burst = limit) => ({ limit, perMs: 1_000, burst });
      expect(
        config.channels.map((channel) => ('rate' in channel.outbound ? channel.outbound.rate : null)),
      ).toEqual([
        {
          enabled: true,
          perBot: second(30, 1),
          perChat: second(1),
          perGroup: { limit: 20, perMs: 60_000, burst: 20 },
        },
        { enabled: true, perBot: second(5, 1), perChat: second(1), perGroup: null },
        { enabled: false, perBot: second(50), perChat: { limit: 5, perMs: 5_000, burst: 5 }, perGroup: null },
        { enabled: true, perBot: { limit: 10, perMs: 2_000, burst: 10 }, perChat: second(1), perGroup: null },
        { enabled: true, perBot: second(50), perChat: null, perGroup: null },
      ]);
    });

    it('names the path of every bad outbound.rate entry', () => {
      const bad = ConfigSchema.safeParse({
        channels: [
          { ...chat, type: 'telegram', outbound: { rate: { per_chat: { limit: 0, per: '1s' } } } },
          {
            id: 's',
            type: 'slack',
            bot_token: 'b',
            signing_secret: 's',
            outbound: { rate: { per_bot: { limit: 1 } } },
          },
          { id: 'd', type: 'discord', token: 't', outbound: { rate: { enabled: 'yes', per_chan: null } } },
          { id: 'o', type: 'openapi', outbound: { rate: { enabled: true } } },
        ],
      });
      expect(bad.error?.issues.map((issue) => issue.path.join('.'))).toEqual([
        'channels.0.outbound.rate.per_chat.limit',
        'channels.1.outbound.rate.per_bot.per',
        'channels.2.outbound.rate.enabled',
        'channels.2.outbound.rate',
        'channels.3.outbound',
      ]);
    });

    it('keeps the api base urls the tests point at fake servers', () => {
      const config = ConfigSchema.parse({
        channels: [
          { ...chat, type: 'telegram', api_root: 'http://127.0.0.1:9001' },
          {
            id: 's',
            type: 'slack',
            bot_token: 'b',
            signing_secret: 's',
            api_url: 'http://127.0.0.1:9002/api/',
          },
          { id: 'd', type: 'discord', token: 't', api_url: 'http://127.0.0.1:9003/api' },
        ],
      });
      expect(config.channels.map((channel) => ('apiRoot' in channel ? channel.apiRoot : undefined))).toEqual([
        'http://127.0.0.1:9001',
        undefined,
        undefined,
      ]);
      expect(config.channels[1]).toMatchObject({ apiUrl: 'http://127.0.0.1:9002/api/' });
      expect(config.channels[2]).toMatchObject({ apiUrl: 'http://127.0.0.1:9003/api' });
    });
  });

  describe('when pipelines are configured', () => {
    it('splits each into the core policy and its type options', () => {
      const config = ConfigSchema.parse({
        pipelines: [
          {
            id: 'assistant',
            type: 'http',
            url: 'http://bot.internal/answer',
            secret: 's',
            timeout: '1m',
            max_concurrency: 8,
            aggregation: { enabled: true, delay: '2s' },
            busy_mode: 'collect',
            retry: { max_attempts: 3 },
          },
        ],
        routing: { default: 'assistant' },
      });
      const [pipeline] = config.pipelines;
      expect(pipeline?.options).toEqual({ type: 'http', url: 'http://bot.internal/answer', secret: 's' });
      expect(pipeline?.policy).toMatchObject({
        id: 'assistant',
        timeoutMs: 60_000,
        maxConcurrency: 8,
        aggregation: { enabled: true, delayMs: 2000, maxWaitMs: 10_000 },
        busyMode: 'collect',
        retry: { maxAttempts: 3 },
      });
    });

    it('refuses a key of another pipeline type', () => {
      const result = ConfigSchema.safeParse({ pipelines: [{ id: 'e', type: 'echo', url: 'http://x' }] });
      expect(result.error?.issues.map((issue) => [issue.code, issue.path])).toEqual([
        ['unrecognized_keys', ['pipelines', 0]],
      ]);
    });
  });

  describe('when a process pipeline runs its workers as another user', () => {
    const agent = { id: 'agent', type: 'process', command: 'agent' };

    it('takes run_as user and group as names or ids', () => {
      const result = ConfigSchema.parse({
        pipelines: [{ ...agent, run_as: { user: 'worker', group: 10001 } }],
        routing: { default: 'agent' },
      });
      expect(result.pipelines[0]?.options).toMatchObject({ run_as: { user: 'worker', group: 10001 } });
    });

    it('refuses inherit_env with run_as, and a run_as without a user, naming the keys', () => {
      const result = ConfigSchema.safeParse({
        pipelines: [
          { ...agent, run_as: { user: 'worker' }, inherit_env: true },
          { ...agent, id: 'other', run_as: { group: 'worker' } },
        ],
        routing: { default: 'agent' },
      });
      expect(result.error?.issues.map((issue) => issue.path)).toEqual([
        ['pipelines', 0, 'inherit_env'],
        ['pipelines', 1, 'run_as', 'user'],
      ]);
    });
  });

  describe('when a process pipeline limits its sessions', () => {
    const agent = { id: 'agent', type: 'process', command: 'agent', max_active_sessions: 4 };

    it('refuses an idle_timeout not shorter than timeout, naming the key', () => {
      const result = ConfigSchema.safeParse({
        pipelines: [{ ...agent, idle_timeout: '10m', timeout: '10m' }],
        routing: { default: 'agent' },
      });
      expect(result.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
        [
          ['pipelines', 0, 'idle_timeout'],
          expect.stringMatching(
            /^must be shorter than timeout \(600000 ms\) when max_active_sessions is set/,
          ),
        ],
      ]);
    });

    it('accepts an idle_timeout shorter than timeout, and any idle_timeout without a limit', () => {
      const limited = { ...agent, idle_timeout: '2m', timeout: '10m' };
      const { max_active_sessions: _, ...unlimited } = { ...agent, idle_timeout: '1h', timeout: '10m' };
      for (const pipeline of [limited, unlimited]) {
        expect(
          ConfigSchema.safeParse({ pipelines: [pipeline], routing: { default: 'agent' } }).error,
        ).toBeUndefined();
      }
    });
  });

  describe('when two openapi channels share a prefix', () => {
    it('names the second one, the default /v1 included', () => {
      const result = ConfigSchema.safeParse({
        channels: [
          { id: 'api', type: 'openapi' },
          { id: 'other', type: 'openapi', prefix: '/v2' },
          { id: 'again', type: 'openapi' },
        ],
      });
      expect(result.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
        [['channels', 2, 'prefix'], `prefix "/v1" is also channels[0]'s: give each openapi channel its own`],
      ]);
    });
  });

  describe('when ids repeat', () => {
    it('names the repeated channel and pipeline ids', () => {
      const result = ConfigSchema.safeParse({
        channels: [
          { id: 'api', type: 'openapi' },
          { id: 'api', type: 'openapi', prefix: '/v2' },
        ],
        pipelines: [
          { id: 'echo', type: 'echo' },
          { id: 'echo', type: 'echo' },
        ],
      });
      expect(result.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
        [
          ['channels', 1, 'id'],
          'duplicate channel id "api" (also channels[0]): ids are unique across the file',
        ],
        [
          ['pipelines', 1, 'id'],
          'duplicate pipeline id "echo" (also pipelines[0]): ids are unique across the file',
        ],
      ]);
    });
  });
});

describe('admin tokens', () => {
  it('labels admin.token and admin.tokens, the first one being the token the CLI sends', () => {
    const config = ConfigSchema.parse({
      admin: { token: 'main-secret', label: 'ops', tokens: [{ label: 'ann', token: 'ann-secret' }] },
    });
    expect(config.admin.token).toBe('main-secret');
    expect(config.admin.tokens).toEqual([
      { label: 'ops', token: 'main-secret' },
      { label: 'ann', token: 'ann-secret' },
    ]);
    const only = ConfigSchema.parse({ admin: { tokens: [{ label: 'ann', token: 'ann-secret' }] } });
    expect(only.admin.token).toBe('ann-secret');
  });

  it('refuses a label used twice and one with spaces, naming the path', () => {
    const twice = ConfigSchema.safeParse({
      admin: { token: 'a-secret', tokens: [{ label: 'admin', token: 'b-secret' }] },
    });
    expect(twice.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      ['admin.tokens', 'label "admin" is used twice'],
    ]);
    const spaced = ConfigSchema.safeParse({ admin: { tokens: [{ label: 'two words', token: 'b-secret' }] } });
    expect(spaced.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['admin.tokens.0.label']);
  });
});
