import { DiscordChannelSchema } from '@switchboard/channel-discord/options';
import { FeishuChannelSchema } from '@switchboard/channel-feishu/options';
import { bearerCredential } from '@switchboard/channel-kit/options';
import { LineChannelSchema } from '@switchboard/channel-line/options';
import { OpenApiChannelSchema } from '@switchboard/channel-openapi/options';
import { SlackChannelSchema } from '@switchboard/channel-slack/options';
import { TeamsChannelSchema } from '@switchboard/channel-teams/options';
import { TelegramChannelSchema } from '@switchboard/channel-telegram/options';
import { WhatsAppChannelSchema } from '@switchboard/channel-whatsapp/options';
import {
  ConcurrencySchema,
  HandoffSettingsSchema,
  durationMs,
  numeric,
  PipelinePolicyFields,
  QueueLimitsSchema,
  QuotaReplySchema,
  QuotasSchema,
  RoutingSchema,
  secretField,
  TenantShareFields,
  toPipelinePolicy,
} from '@switchboard/core';
import { ServerSchema } from '@switchboard/http/server-schema';
import {
  EchoPipelineOptionsSchema,
  HttpPipelineOptionsSchema,
  OpenAIPipelineOptionsSchema,
  checkProcessPipelinePolicy,
  ProcessPipelineOptionsSchema,
} from '@switchboard/pipelines';
import { z } from 'zod';
import { checkTenants, flattenTenants } from './tenants.js';

// The whole of switchboard.yaml (docs/design.md §6). A section owned by a package is that
// package's schema (`server` from @switchboard/http, each `channels[]` type from its channel's
// `…/options`, each `pipelines[]` type from @switchboard/pipelines, core's own sections); the rest
// and its defaults live here, and no default is stated twice. YAML keys are snake_case; the
// parsed output is camelCase with units in the names (`drainTimeoutMs`), like core's own sections
// (`concurrency` → `{ global, perSession }`).

/** The name an admin token goes by: the operator named in handoff transcripts and the audit. */
const TokenLabelSchema = z.string().regex(/^[A-Za-z0-9_.@-]{1,64}$/, 'use 1 to 64 letters, digits, _ . @ -');

export const AdminSchema = z
  .strictObject({
    /** Bearer token of the admin API; empty or absent (and no `tokens`) = loopback only. */
    token: bearerCredential().optional(),
    /** The name `token` goes by. */
    label: TokenLabelSchema.default('admin'),
    /** Further admin tokens, one per operator, each with its name. */
    tokens: z
      .array(z.strictObject({ label: TokenLabelSchema, token: bearerCredential().min(1) }))
      .default([]),
    /** Operations endpoints that also need the admin token (or loopback); `/healthz` stays open. */
    protect: z.array(z.enum(['metrics', 'readyz', 'docs'])).default([]),
  })
  .superRefine(({ token, label, tokens }, context) => {
    const labels = [
      ...(token === undefined || token === '' ? [] : [label]),
      ...tokens.map((entry) => entry.label),
    ];
    labels.forEach((name, index) => {
      if (labels.indexOf(name) !== index)
        context.addIssue({ code: 'custom', path: ['tokens'], message: `label "${name}" is used twice` });
    });
    // One token, one operator: the same token under two labels would record actions under the first.
    const secrets = tokens.map((entry) => entry.token);
    if (token !== undefined && token !== '') secrets.push(token);
    if (new Set(secrets).size !== secrets.length)
      context.addIssue({
        code: 'custom',
        path: ['tokens'],
        message: 'a token is given twice: give each operator their own',
      });
  })
  // `token: "${SWITCHBOARD_ADMIN_TOKEN:-}"` yields "" when unset: that means no token.
  .transform(({ token, label, tokens, protect }) => {
    const labelled = [...(token === undefined || token === '' ? [] : [{ label, token }]), ...tokens];
    // `token`: the one the CLI sends; undefined exactly when no token is set (loopback only).
    return { token: labelled[0]?.token, tokens: labelled, protect };
  });

/** Where SQLite keeps its file unless `store.path` (or `audit.path`) says otherwise. */
export const DEFAULT_SQLITE_PATH = './data/switchboard.db';

/** A Redis URL; it may hold a password. */
const redisUrl = () =>
  secretField(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }));

// `kind` may be left out for the default backend, so `store: { path: … }` means sqlite.
export const StoreSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('sqlite').default('sqlite'),
    path: z.string().min(1).default(DEFAULT_SQLITE_PATH),
  }),
  z.strictObject({ kind: z.literal('memory') }),
  z
    .strictObject({
      kind: z.literal('redis'),
      /** One Redis (or a Sentinel-free primary). Either this or `cluster`. */
      url: redisUrl().optional(),
      /**
       * The seed nodes of a Redis Cluster, any reachable one enough to find the others. Without
       * `partitions` every key of a deployment sits in one slot (`{<prefix>}`), so one deployment
       * uses one primary of the cluster; deployments with other prefixes spread over the others.
       * Either this or `url`.
       */
      cluster: z.array(redisUrl()).min(1).max(64).optional(),
      /**
       * Names this deployment's keys (`{<prefix>}:…`, one Redis Cluster slot): replicas with the
       * same prefix share one pool; deployments on one Redis keep apart by their prefixes.
       */
      prefix: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'use 1 to 64 letters, digits, _ . : -')
        .default('switchboard'),
      /**
       * Replicas that must hold a write (an accepted message, a claim, a settlement, a reply, a
       * channel lease) before the gateway answers for it: Redis `WAIT` after each. 0 waits for
       * none, and a failover can lose the last writes (docs/design.md §5 "Failover").
       */
      wait_replicas: numeric(z.number().int().min(0).max(16)).prefault(0),
      /**
       * How many partitions the sessions spread over, each under its own hash tag
       * (`{<prefix>#<k>}`, partition 0 `{<prefix>}`), so that on a Redis Cluster they spread over
       * the primaries (docs/design.md §5 "Partitions"). A session's order, debounce and
       * deduplication hold inside its partition, the global limit over all of them; pipeline
       * limits, tenant shares and `max_pending` per partition. Every replica must count the same;
       * change it only on a drained pool (queued messages stay in the partition they were in).
       */
      partitions: numeric(z.number().int().min(1).max(256)).prefault(1),
      /**
       * How long a write waits for `wait_replicas`; past it the call fails as `SB_STORE_UNAVAILABLE`
       * (an HTTP message gets 503). Under the 2 s command timeout: commands queue behind a `WAIT`.
       */
      wait_timeout: durationMs({ min: '10ms', max: '1s' }).prefault('500ms'),
    })
    .superRefine((store, context) => {
      if ((store.url === undefined) === (store.cluster === undefined))
        context.addIssue({
          code: 'custom',
          path: store.url === undefined ? ['url'] : ['cluster'],
          message: 'give either url (one Redis) or cluster (the seed nodes of a Redis Cluster)',
        });
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

/** One `channels[]` entry: each type's schema is its channel package's own (`…/options`). */
export const ChannelSchema = z.discriminatedUnion('type', [
  OpenApiChannelSchema,
  TelegramChannelSchema,
  SlackChannelSchema,
  DiscordChannelSchema,
  LineChannelSchema,
  WhatsAppChannelSchema,
  TeamsChannelSchema,
  FeishuChannelSchema,
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

/** Names a tenant in records, metrics and the admin API. */
const TenantIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'use 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit');

/**
 * One `tenants[]` entry (or one file of `tenants_dir`): a namespace of channels, pipelines and
 * routing. Its routing may name only its own pipelines (and `__discard__`).
 */
export const TenantSchema = z.strictObject({
  id: TenantIdSchema,
  ...TenantShareFields,
  /**
   * Bearer token of this tenant's admin scope: the admin API, console and CLI limited to its own
   * records, sessions and routing; empty or absent = none. Unique across the file.
   */
  admin_token: bearerCredential().optional(),
  channels: z.array(ChannelSchema).default([]),
  pipelines: z.array(PipelineSchema).default([]),
  routing: RoutingSchema,
  /** Token buckets over its messages (docs/design.md §10); cluster-wide with `store: redis`. */
  quotas: QuotasSchema.default([]),
  /** What a chat channel answers a sender past a quota, once per the quota's period; absent: nothing. */
  quota_reply: QuotaReplySchema.optional(),
});

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
    handoff: HandoffSettingsSchema.prefault({}),
    telemetry: TelemetrySchema.prefault({}),
    channels: z.array(ChannelSchema).prefault([{ id: 'api', type: 'openapi' }]),
    pipelines: z.array(PipelineSchema).prefault([{ id: 'echo', type: 'echo' }]),
    routing: RoutingSchema.prefault({ default: 'echo' }),
    /** The tenant `default`'s quotas (those of the top-level channels), like a tenant's. */
    quotas: QuotasSchema.default([]),
    /** The tenant `default`'s `quota_reply`, like a tenant's. */
    quota_reply: QuotaReplySchema.optional(),
    /** Further tenants, each with its own channels, pipelines and routing (docs/design.md §10). */
    tenants: z.array(TenantSchema).default([]),
    /**
     * A directory of further tenants, one YAML file (`*.yaml`, `*.yml`) each, shaped like a
     * `tenants[]` entry; relative to the working directory. Read by `loadConfig`, after `tenants`.
     */
    tenants_dir: z.string().min(1).optional(),
  })
  .superRefine(
    (config, ctx) => {
      checkTenants(config, ctx);
      checkSharedAudit(config, ctx);
    },
    // Report duplicates together with every other problem, not after they are fixed.
    { when: () => true },
  )
  // Ids are unique across the file: the gateway runs every tenant's channels and pipelines as one
  // set (`channels`, `pipelines`) and routes each channel's messages by its tenant's `routing`.
  .transform(({ tenants_dir: _read, ...config }) => flattenTenants(config));

/** The parsed configuration: defaults applied, durations in ms, keys camelCase. */
export type Config = z.output<typeof ConfigSchema>;
/** What may be written in switchboard.yaml. */
export type ConfigInput = z.input<typeof ConfigSchema>;
export type StoreConfig = Config['store'];
export type AuditConfig = Config['audit'];
export type TracesConfig = Config['telemetry']['traces'];
export type ChannelConfig = Config['channels'][number];
export type PipelineConfig = Config['pipelines'][number];
/** What may be written as one `tenants[]` entry or one file of `tenants_dir`. */
export type TenantInput = z.input<typeof TenantSchema>;
