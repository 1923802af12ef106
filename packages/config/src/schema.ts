import {
  ConcurrencySchema,
  type ChannelPolicy,
  durationMs,
  numeric,
  GroupPolicySchema,
  PipelinePolicyFields,
  QueueLimitsSchema,
  RoutingSchema,
  secretField,
  toPipelinePolicy,
} from '@switchboard/core';
import {
  EchoPipelineOptionsSchema,
  HttpPipelineOptionsSchema,
  OpenAIPipelineOptionsSchema,
  checkProcessPipelinePolicy,
  ProcessPipelineOptionsSchema,
} from '@switchboard/pipelines';
import { z } from 'zod';
import { isTrustedProxyEntry } from './trusted-proxy.js';

// The whole of switchboard.yaml (docs/design.md §6). Every default lives here and nowhere else. YAML keys
// are snake_case; the parsed output is camelCase with units in the names (`drainTimeoutMs`),
// like core's own sections (`concurrency` → `{ global, perSession }`).

/** An http(s) base URL of a platform API, for self-hosted servers, proxies and test fakes. */
const apiUrl = () => z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional();
/**
 * Whitespace in a credential is a paste or a file's trailing newline, never part of it: the
 * other side would never send it back, so every request would be refused. Refused at load,
 * before anything is locked out; the message never quotes the value.
 */
const noWhitespace = (schema: z.ZodString) =>
  schema.refine((value) => !/\s/.test(value), 'must not contain whitespace');

/** A token or key: marked secret, so that logs, audit records and config errors never show it. */
const secret = () => secretField(noWhitespace(z.string().min(1, 'must not be empty')));

/**
 * A credential clients send back as `Authorization: Bearer <value>` (`admin.token`, `api_keys`);
 * empty means none. A header carries no whitespace inside a token and trims it around one, and
 * Node reads header bytes as Latin-1, so a value with whitespace or beyond visible ASCII could
 * never match.
 */
const bearerCredential = () =>
  secretField(
    noWhitespace(z.string()).refine(
      (value) => /\s/.test(value) || /^[\x21-\x7e]*$/.test(value),
      'must hold visible ASCII characters only (a bearer token)',
    ),
  );

export const ServerSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0'),
    /** 0 picks a free port (tests). */
    port: numeric(z.number().int().min(0).max(65_535)).prefault(8080),
    /** Largest accepted request body, in bytes. */
    body_limit: numeric(z.number().int().min(1)).prefault(1_048_576),
    /**
     * Which peers may name the client in `X-Forwarded-For` (docs/design.md §7): `false` none, `true`
     * every peer, or a list of addresses, CIDR ranges and `loopback` / `linklocal` /
     * `uniquelocal`. Only the logged client address follows it; a request carrying forwarding
     * headers is never loopback, whatever this says.
     */
    trust_proxy: z
      .union([
        z.boolean(),
        z
          .array(
            z.string().refine(isTrustedProxyEntry, {
              error:
                'expected an IP address, a CIDR range like 10.0.0.0/8, loopback, linklocal or uniquelocal',
            }),
          )
          .min(1, 'list at least one proxy, or write false'),
      ])
      .default(false),
    /**
     * Longest a client may take to send a request's headers and body; then 408 and the connection
     * is closed. A client trickling a body must not hold a socket (and a shutdown) for ever.
     */
    request_timeout: durationMs()
      .refine((ms) => ms >= 1000, 'must be at least 1s')
      .prefault('30s'),
    /**
     * Connections open at once; past it a new one is closed as soon as it is accepted. Each
     * holds a file descriptor (a slow sender up to `request_timeout`, an idle keep-alive one
     * 72 s), so without a cap clients could exhaust the process's descriptors.
     */
    max_connections: numeric(z.number().int().min(1).max(1_000_000)).prefault(10_000),
  })
  .transform(({ host, port, body_limit, trust_proxy, request_timeout, max_connections }) => ({
    host,
    port,
    bodyLimitBytes: body_limit,
    trustProxy: trust_proxy,
    requestTimeoutMs: request_timeout,
    maxConnections: max_connections,
  }));

export const AdminSchema = z
  .strictObject({
    /** Bearer token of the admin API; empty or absent = loopback only. */
    token: bearerCredential().optional(),
    /** Operations endpoints that also need the admin token (or loopback); `/healthz` stays open. */
    protect: z.array(z.enum(['metrics', 'readyz', 'docs'])).default([]),
  })
  // `token: "${SWITCHBOARD_ADMIN_TOKEN:-}"` yields "" when unset: that means no token.
  .transform(({ token, protect }) => ({ token: token === '' ? undefined : token, protect }));

/** Where SQLite keeps its file unless `store.path` (or `audit.path`) says otherwise. */
export const DEFAULT_SQLITE_PATH = './data/switchboard.db';

// `kind` may be left out for the default backend, so `store: { path: … }` means sqlite.
export const StoreSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('sqlite').default('sqlite'),
    path: z.string().min(1).default(DEFAULT_SQLITE_PATH),
  }),
  z.strictObject({ kind: z.literal('memory') }),
  z.strictObject({
    kind: z.literal('redis'),
    url: secretField(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' })),
    /**
     * Names this deployment's keys (`{<prefix>}:…`, one Redis Cluster slot): replicas with the
     * same prefix share one pool; deployments on one Redis keep apart by their prefixes.
     */
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'use 1 to 64 letters, digits, _ . : -')
      .default('switchboard'),
  }),
]);

const auditFields = {
  retention_days: numeric(z.number().int().min(1)).prefault(30),
  /** `full`, `none`, or the number of characters kept. */
  store_text: z
    .union([z.enum(['full', 'none']), numeric(z.number().int().min(1))], {
      error: 'expected full, none or a number of characters (at least 1)',
    })
    .prefault('full'),
  /** Also record `ignored` outcomes (admission); off because groups produce many. */
  ignored: z.boolean().default(false),
};

export const AuditSchema = z
  .discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('sqlite').default('sqlite'),
      /**
       * The SQLite file of the audit log, message statuses and history. Default: `store.path`
       * with `store: sqlite`.
       */
      path: z.string().min(1).optional(),
      ...auditFields,
    }),
    z.strictObject({
      kind: z.literal('postgres'),
      /** Secret: it may hold the password (`postgres://user:password@host/db`). */
      url: secretField(
        z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' }),
      ),
      /**
       * The PostgreSQL schema of the audit log, message statuses and history, created when
       * missing; replicas naming the same one share them. The rule is store-postgres's own.
       */
      schema: z
        .string()
        .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'use 1 to 63 of a-z, 0-9 and _, not starting with a digit')
        .default('switchboard'),
      /**
       * With `store: redis`: audit records and final statuses written while PostgreSQL is
       * unreachable wait in Redis (drained by any replica once it answers); from this many on,
       * admission answers 503 (messages admitted already still add theirs).
       */
      outbox_max_entries: numeric(z.number().int().min(1).max(10_000_000)).prefault(100_000),
      ...auditFields,
    }),
  ])
  .transform(({ retention_days, store_text, ignored, ...target }) => {
    const common = { retentionDays: retention_days, storeText: store_text, recordIgnored: ignored };
    if (target.kind === 'sqlite') return { ...target, ...common };
    const { outbox_max_entries, ...postgres } = target;
    return { ...postgres, ...common, outboxMaxEntries: outbox_max_entries };
  });

export const ShutdownSchema = z
  .strictObject({ drain_timeout: durationMs({ max: '1h' }).prefault('30s') })
  .transform(({ drain_timeout }) => ({ drainTimeoutMs: drain_timeout }));

/**
 * `telemetry.traces`: OpenTelemetry traces of every message, exported over OTLP/HTTP
 * (docs/design.md §2 "Tracing"). Off unless `endpoint` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_ENDPOINT`) is set; the other `OTEL_*` variables of the exporter and the
 * resource apply as usual.
 */
export const TracesSchema = z
  .strictObject({
    /** The collector's OTLP/HTTP traces URL, e.g. `http://collector:4318/v1/traces`. */
    endpoint: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    /** Share of messages traced, 0–1 (a continued inbound trace follows its parent's choice). */
    sample_ratio: z.number().min(0).max(1).default(1),
    /** `service.name` of the spans; `OTEL_SERVICE_NAME` when absent, else `switchboard`. */
    service_name: z.string().min(1).optional(),
  })
  .transform(({ endpoint, sample_ratio, service_name }) => ({
    endpoint,
    sampleRatio: sample_ratio,
    serviceName: service_name,
  }));

export const TelemetrySchema = z.strictObject({ traces: TracesSchema.prefault({}) });

const channelId = z.string().regex(/^[A-Za-z0-9_-]+$/, 'use letters, digits, _ and -');

/** `channels[].outbound.retry`: the waits between tries of a delivery that failed. */
const OutboundRetrySchema = z
  .strictObject({
    /** The first wait; each later one doubles (with jitter), up to `max_delay`. */
    base_delay: durationMs({ min: '100ms', max: '1h' }).prefault('1s'),
    /** The longest wait, also when the platform asks for longer (`retry_after`). */
    max_delay: durationMs({ min: '100ms', max: '1h' }).prefault('1m'),
  })
  .transform(({ base_delay, max_delay }) => ({ baseDelayMs: base_delay, maxDelayMs: max_delay }));

/**
 * `channels[].outbound`: how a channel sends replies (docs/design.md §2 "Outbox"); every channel
 * type has these keys.
 */
const outboundFields = {
  /**
   * The longest one try at sending a delivery may take, rate-limit waits included; then the
   * send is aborted and tried again later (docs/design.md §7).
   */
  send_timeout: durationMs()
    .prefault('30s')
    .refine((ms) => ms >= 1_000 && ms <= 600_000, 'must be between 1s and 10m'),
  /**
   * Streamed answers (docs/design.md §4): the least time between two previews of an answer in
   * one chat (the post, each edit and the final edit); pieces arriving meanwhile are coalesced.
   */
  edit_interval: durationMs()
    .prefault('1s')
    .refine((ms) => ms >= 100 && ms <= 60_000, 'must be between 100ms and 1m'),
  /** Chats of this channel sent to at once; one delivery at a time per chat. */
  concurrency: numeric(z.number().int().min(1).max(1000)).prefault(64),
  /**
   * How long a delivery is tried, from when its replies were stored; then it is a dead letter
   * `delivery_failed` whose replay sends the stored replies again.
   */
  max_age: durationMs({ min: '1s', max: '168h' }).prefault('1h'),
  retry: OutboundRetrySchema.prefault({}),
};

type OutboundFields = z.output<z.ZodObject<typeof outboundFields>>;

function toOutbound({ send_timeout, edit_interval, concurrency, max_age, retry }: OutboundFields) {
  return {
    sendTimeoutMs: send_timeout,
    editIntervalMs: edit_interval,
    concurrency,
    maxAgeMs: max_age,
    retry,
  };
}

const OutboundSchema = z.strictObject(outboundFields).transform(toOutbound);

/**
 * One token bucket of `outbound.rate`: `limit` calls per `per`, at most `burst` of them at once
 * (default: `limit`); `null` switches the bucket off.
 */
const BucketRateSchema = z
  .strictObject({
    limit: numeric(z.number().int().min(1).max(100_000)),
    per: durationMs({ min: '1ms', max: '1h' }),
    burst: numeric(z.number().int().min(1).max(100_000)).optional(),
  })
  .transform(({ limit, per, burst }) => ({ limit, perMs: per, burst: burst ?? limit }));

type BucketRateInput = z.input<typeof BucketRateSchema>;

/** A platform's pacing defaults (docs/channels.md#pacing), in YAML form. */
interface RateDefaults {
  enabled: boolean;
  per_bot: BucketRateInput | null;
  per_chat: BucketRateInput | null;
  per_group: BucketRateInput | null;
}

/**
 * Telegram's documented limits: 30 messages a second per bot, 1 per chat, 20 a minute per group.
 * The bot's 30 go out evenly (burst 1): a burst of 30 requests leaves the process spread out
 * anyway and reaches Telegram bunched, looking faster than it was sent.
 */
const TELEGRAM_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 30, per: '1s', burst: 1 },
  per_chat: { limit: 1, per: '1s' },
  per_group: { limit: 20, per: '1m' },
};

/**
 * Slack's chat.postMessage: 1 message a second per channel (short bursts tolerated); the
 * workspace-wide limit is undocumented ("several hundred a minute"), so the bot is kept at 300,
 * evenly like Telegram's.
 */
const SLACK_RATE: RateDefaults = {
  enabled: true,
  per_bot: { limit: 5, per: '1s', burst: 1 },
  per_chat: { limit: 1, per: '1s' },
  per_group: null,
};

/**
 * discord.js queues requests by Discord's own per-route buckets, so ours are off by default;
 * switched on they pace at Discord's global 50 a second and a channel's 5 per 5 s.
 */
const DISCORD_RATE: RateDefaults = {
  enabled: false,
  per_bot: { limit: 50, per: '1s' },
  per_chat: { limit: 5, per: '5s' },
  per_group: null,
};

/** `channels[].outbound.rate`: the token buckets that pace a chat platform's sends and edits. */
function outboundRateSchema(defaults: RateDefaults) {
  return z
    .strictObject({
      /** Off: calls are never held back, and the platform's 429s are waited out (its `retry_after`). */
      enabled: z.boolean().default(defaults.enabled),
      /** Every call of the bot. */
      per_bot: BucketRateSchema.nullable().prefault(defaults.per_bot),
      /** Every call into one chat (a Slack or Discord channel). */
      per_chat: BucketRateSchema.nullable().prefault(defaults.per_chat),
      /** Every call into one group chat, on top of `per_chat`. */
      per_group: BucketRateSchema.nullable().prefault(defaults.per_group),
    })
    .transform((rate) => ({
      enabled: rate.enabled,
      perBot: rate.per_bot,
      perChat: rate.per_chat,
      perGroup: rate.per_group,
    }));
}

/** `channels[].outbound` of a chat platform: the common keys plus `rate` with the platform's defaults. */
function pacedOutboundSchema(defaults: RateDefaults) {
  return z
    .strictObject({ ...outboundFields, rate: outboundRateSchema(defaults).prefault({}) })
    .transform(({ rate, ...fields }) => ({ ...toOutbound(fields), rate }));
}

export const OpenApiChannelSchema = z
  .strictObject({
    id: channelId,
    type: z.literal('openapi'),
    prefix: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path like /v1, without a trailing slash')
      .default('/v1'),
    /** Requests in flight before 429. */
    max_concurrent_requests: numeric(z.number().int().min(1)).prefault(100),
    /** Bearer keys; empty strings are dropped so `${API_KEY:-}` means none (loopback only). */
    api_keys: secretField(z.array(bearerCredential())).default([]),
    /** How long `POST …/messages` with `wait: true` waits for the replies before answering 202. */
    wait_timeout: durationMs({ max: '10m' }).prefault('30s'),
    /** The most a request may ask for with `timeout_ms`. */
    max_wait_timeout: durationMs({ max: '10m' }).prefault('2m'),
    outbound: OutboundSchema.prefault({}),
    /** Event streams (`GET …/sessions/{id}/events`) open at once on the channel, before 429. */
    max_event_streams: numeric(z.number().int().min(1)).prefault(1000),
    /** Event streams open at once on one session, before 429. */
    max_event_streams_per_session: numeric(z.number().int().min(1)).prefault(10),
    /** Bytes an event stream may have unsent (a client that does not read) before it is disconnected. */
    max_event_stream_buffer: numeric(z.number().int().min(1)).prefault(1_048_576),
    /**
     * Bytes all event streams of the channel may have unsent together; past it the streams
     * holding most are disconnected. Without it the worst case was `max_event_streams` times
     * `max_event_stream_buffer` (1 GiB with the defaults).
     */
    max_event_stream_buffer_total: numeric(z.number().int().min(1)).prefault(67_108_864),
  })
  .superRefine((channel, ctx) => {
    if (channel.max_wait_timeout < channel.wait_timeout) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_wait_timeout'],
        message: 'must not be shorter than wait_timeout',
      });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    prefix: channel.prefix,
    maxConcurrentRequests: channel.max_concurrent_requests,
    apiKeys: channel.api_keys.filter((key) => key !== ''),
    waitTimeoutMs: channel.wait_timeout,
    maxWaitTimeoutMs: channel.max_wait_timeout,
    outbound: channel.outbound,
    maxEventStreams: channel.max_event_streams,
    maxEventStreamsPerSession: channel.max_event_streams_per_session,
    maxEventStreamBufferBytes: channel.max_event_stream_buffer,
    maxEventStreamBufferTotalBytes: channel.max_event_stream_buffer_total,
  }));

/** Keys every chat platform channel shares: how groups are admitted and sessions keyed. */
const chatChannelFields = {
  id: channelId,
  group: GroupPolicySchema.prefault({}),
  session_scope: z.enum(['chat', 'thread']).default('chat'),
};

function policyOf(channel: {
  group: z.output<typeof GroupPolicySchema>;
  session_scope: 'chat' | 'thread';
}): ChannelPolicy {
  return { admission: channel.group, sessionScope: channel.session_scope };
}

export const TelegramChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('telegram'),
    outbound: pacedOutboundSchema(TELEGRAM_RATE).prefault({}),
    token: secret(),
    mode: z.enum(['polling', 'webhook']).default('polling'),
    api_root: apiUrl(),
    /** Required with `mode: webhook`; with `url` the channel calls setWebhook itself. */
    webhook: z
      .strictObject({
        // Telegram's own limits for X-Telegram-Bot-Api-Secret-Token.
        secret_token: secretField(z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'use 1-256 of A-Z a-z 0-9 _ -')),
        url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
      })
      .optional(),
  })
  .superRefine((channel, ctx) => {
    if (channel.mode === 'webhook' && channel.webhook === undefined) {
      ctx.addIssue({ code: 'custom', path: ['webhook'], message: 'required when mode is webhook' });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    token: channel.token,
    mode: channel.mode,
    apiRoot: channel.api_root,
    webhook: channel.webhook && { secretToken: channel.webhook.secret_token, url: channel.webhook.url },
    policy: policyOf(channel),
    outbound: channel.outbound,
  }));

export const SlackChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('slack'),
    outbound: pacedOutboundSchema(SLACK_RATE).prefault({}),
    bot_token: secret(),
    /** Verifies Events API requests; not used in Socket Mode. */
    signing_secret: secret().optional(),
    api_url: apiUrl(),
    /** An app-level token (`xapp-…`) switches to Socket Mode. */
    app_token: secret().optional(),
    /** Skips the auth.test call at start. */
    bot_user_id: z.string().min(1).optional(),
  })
  .superRefine((channel, ctx) => {
    if (channel.app_token === undefined && channel.signing_secret === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['signing_secret'],
        message: 'required for the Events API (or set app_token for Socket Mode)',
      });
    }
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    botToken: channel.bot_token,
    /** How events arrive: signed HTTP requests, or Socket Mode's outgoing WebSocket. */
    transport:
      channel.app_token === undefined
        ? { mode: 'events_api' as const, signingSecret: channel.signing_secret as string }
        : { mode: 'socket_mode' as const, appToken: channel.app_token },
    apiUrl: channel.api_url,
    botUserId: channel.bot_user_id,
    policy: policyOf(channel),
    outbound: channel.outbound,
  }));

export const DiscordChannelSchema = z
  .strictObject({
    ...chatChannelFields,
    type: z.literal('discord'),
    outbound: pacedOutboundSchema(DISCORD_RATE).prefault({}),
    token: secret(),
    api_url: apiUrl(),
  })
  .transform((channel) => ({
    id: channel.id,
    type: channel.type,
    token: channel.token,
    apiUrl: channel.api_url,
    policy: policyOf(channel),
    outbound: channel.outbound,
  }));

export const ChannelSchema = z.discriminatedUnion('type', [
  OpenApiChannelSchema,
  TelegramChannelSchema,
  SlackChannelSchema,
  DiscordChannelSchema,
]);

/**
 * One `pipelines[]` type: the scheduling fields of core plus the type's own options, strict, and
 * the type's own `check` of the two together. Parsed into `{ id, type, policy, options }`:
 * `policy` for the engine, `options` for the factory.
 */
function pipelineSchema<Shape extends z.ZodRawShape & { type: z.ZodLiteral<string> }>(
  options: z.ZodObject<Shape>,
  check?: (
    entry: z.output<z.ZodObject<Shape>> & z.output<typeof PipelinePolicyFields>,
    ctx: z.RefinementCtx,
  ) => void,
) {
  const optionKeys = Object.keys(options.shape);
  return PipelinePolicyFields.extend(options.shape)
    .strict()
    .superRefine((fields, ctx) =>
      // zod cannot name the merged output of a generic shape; it is the two outputs together.
      check?.(fields as z.output<z.ZodObject<Shape>> & z.output<typeof PipelinePolicyFields>, ctx),
    )
    .transform((fields) => {
      // zod cannot name the merged output of a generic shape; these are its two halves.
      const policyFields = fields as z.output<typeof PipelinePolicyFields>;
      const own = Object.fromEntries(
        Object.entries(fields).filter(([key]) => optionKeys.includes(key)),
      ) as z.output<z.ZodObject<Shape>> & { type: z.output<Shape['type']> };
      return { id: policyFields.id, type: own.type, policy: toPipelinePolicy(policyFields), options: own };
    });
}

export const PipelineSchema = z.discriminatedUnion('type', [
  pipelineSchema(EchoPipelineOptionsSchema),
  pipelineSchema(HttpPipelineOptionsSchema),
  pipelineSchema(OpenAIPipelineOptionsSchema),
  pipelineSchema(ProcessPipelineOptionsSchema, checkProcessPipelinePolicy),
]);

/**
 * Flags repeated `id`s in `section`. It also runs when other problems were found (see `when`
 * below), so the value may be partly unparsed: ids are read defensively.
 */
function checkUniqueIds(items: unknown, section: string, ctx: z.RefinementCtx) {
  if (!Array.isArray(items)) return;
  const first = new Map<string, number>();
  items.forEach((item: unknown, index) => {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id !== 'string') return;
    const earlier = first.get(id);
    if (earlier === undefined) first.set(id, index);
    else {
      ctx.addIssue({
        code: 'custom',
        path: [section, index, 'id'],
        message: `duplicate id ${JSON.stringify(id)} (also ${section}[${earlier}])`,
      });
    }
  });
}

/**
 * A pool in Redis is shared by replicas, so what it settles must be too (docs/design.md §5
 * "Several replicas"): the audit log, statuses and history go to PostgreSQL.
 */
function checkSharedAudit(
  // Partial when other sections failed: this check runs with them (see the superRefine below).
  config: { store?: { kind?: string }; audit?: { kind?: string } },
  ctx: z.RefinementCtx,
): void {
  if (config.store?.kind !== 'redis' || config.audit?.kind === 'postgres') return;
  ctx.addIssue({
    code: 'custom',
    path: ['audit', 'kind'],
    message:
      'store.kind redis needs audit.kind postgres (replicas sharing a pool share its audit log, statuses and history)',
  });
}

/**
 * The schema of switchboard.yaml. An empty file is valid and runs the quick start: an `openapi`
 * channel `api`, an `echo` pipeline and `routing: { default: echo }`.
 */
export const ConfigSchema = z
  .strictObject({
    server: ServerSchema.prefault({}),
    admin: AdminSchema.prefault({}),
    store: StoreSchema.prefault({}),
    audit: AuditSchema.prefault({}),
    concurrency: ConcurrencySchema.prefault({}),
    queue: QueueLimitsSchema.prefault({}),
    shutdown: ShutdownSchema.prefault({}),
    telemetry: TelemetrySchema.prefault({}),
    channels: z.array(ChannelSchema).prefault([{ id: 'api', type: 'openapi' }]),
    pipelines: z.array(PipelineSchema).prefault([{ id: 'echo', type: 'echo' }]),
    routing: RoutingSchema.prefault({ default: 'echo' }),
  })
  .superRefine(
    (config, ctx) => {
      checkUniqueIds(config.channels, 'channels', ctx);
      checkUniqueIds(config.pipelines, 'pipelines', ctx);
      checkSharedAudit(config, ctx);
    },
    // Report duplicates together with every other problem, not after they are fixed.
    { when: () => true },
  );

/** The parsed configuration: defaults applied, durations in ms, keys camelCase. */
export type Config = z.output<typeof ConfigSchema>;
/** What may be written in switchboard.yaml. */
export type ConfigInput = z.input<typeof ConfigSchema>;
export type ServerConfig = Config['server'];
export type StoreConfig = Config['store'];
export type AuditConfig = Config['audit'];
export type TracesConfig = Config['telemetry']['traces'];
export type ChannelConfig = Config['channels'][number];
export type OpenApiChannelConfig = z.output<typeof OpenApiChannelSchema>;
export type TelegramChannelConfig = z.output<typeof TelegramChannelSchema>;
export type SlackChannelConfig = z.output<typeof SlackChannelSchema>;
export type DiscordChannelConfig = z.output<typeof DiscordChannelSchema>;
export type PipelineConfig = Config['pipelines'][number];
