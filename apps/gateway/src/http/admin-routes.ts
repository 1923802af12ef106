import type { AuditConfig, ChannelConfig } from '@switchboard/config';
import {
  type AuditLog,
  ChatTypeSchema,
  EVENT_TYPES,
  type MessageStatusStore,
  type PipelineStatus,
  type QueryPool,
  SwitchboardError,
  sessionAddressOf,
} from '@switchboard/core';
import { type AuthHook, MAX_ID_CHARS } from '@switchboard/http';
import { guardAdminScope, mayAccess, scopeOf, tenantFilterOf } from './admin-auth.js';
import type { ReplicaView } from '@switchboard/store-redis';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AdminAuditFiltersSchema } from '../admin/audit-filters.js';
import { auditView } from '../admin/audit-view.js';
import type { OwnedChannels } from '@switchboard/channel-kit';
import type { ReplayResult } from '../admin/dead-letter-replay.js';
import { MAX_SELECTION, applyToSelection, createDeadLetterPurge } from '../admin/dead-letter-selection.js';
import { messagePath } from '../admin/message-path.js';
import type { MessageTrail } from '../admin/message-trail.js';
import type { Overview } from '../admin/overview.js';
import type { DryRunInput, DryRunResult } from '../admin/route-dry-run.js';
import type { RoutingView } from '../admin/routing-view.js';
import type { ReloadResult } from '../reload/live-config.js';

/** Longest text a dry run routes: the channel's own `text` bound. */
const MAX_DRY_RUN_TEXT_CHARS = 32_768;

/** The channel a session key names (keys the pool lists are well formed). */
function channelOfSession(session: string): string {
  return sessionAddressOf(session).channel;
}

/** `GET /admin/sessions`: its answer is read in one pool call, so it stays small. */
const MAX_SESSIONS_LISTED = 200;
const IdSchema = z.string().min(1).max(MAX_ID_CHARS);
/** `?tenant=` of the list routes: one tenant's only (a tenant token's own at most). */
const TenantFilter = IdSchema.optional().describe(
  "Only this tenant's (`default`: the top-level channels'); a tenant's admin token reads its own only.",
);
/** A route a tenant's admin token may call: it answers within that tenant (docs/design.md §10). */
const TENANT = { tenancy: 'tenant' } as const;
/** A route that acts on or shows the whole gateway: a tenant's admin token gets 403. */
const GATEWAY = { tenancy: 'gateway' } as const;
const SelectionSchema = z.strictObject({ ids: z.array(IdSchema).min(1).max(MAX_SELECTION) });

/** `POST /admin/route`: the message a dry run routes, as `switchboard route` takes it. */
const DryRunBodySchema = z.strictObject({
  channel: IdSchema.describe('A configured channel id.'),
  chat_type: ChatTypeSchema.default('person'),
  chat_id: IdSchema,
  sender: IdSchema.optional(),
  text: z.string().min(1).max(MAX_DRY_RUN_TEXT_CHARS),
  mention: z.boolean().default(false).describe('Whether the message mentions the bot (group admission).'),
  event: z
    .enum(EVENT_TYPES)
    .optional()
    .describe('Routes an edit, deletion or reaction of this type instead.'),
});

export interface AdminDeps {
  /** The admin check (`adminAuth`), run `onRequest`: before a query or body is validated. */
  auth: AuthHook;
  auditLog: AuditLog;
  pool: QueryPool;
  /** With a shared pool: the replicas sharing it and the turns each runs (`/admin/queues`). */
  replicas?: () => Promise<ReplicaView[]>;
  /** The state of each pipeline that reports one (`process` pipelines: workers, bound sessions). */
  pipelineStatuses(): Record<string, PipelineStatus>;
  /** The single-owner channels and who holds each one's lease, for `/admin/queues`. */
  channelHolders: OwnedChannels['holders'];
  /** Re-enqueues a dead letter; resolves the new outcome status or throws a SwitchboardError. */
  replay(id: string): Promise<ReplayResult>;
  /** Re-reads the config file and swaps the routing rules; throws SB_CONFIG_INVALID and keeps the old rules. */
  /** Reloads the config file (`LiveConfig.reload`). */
  reload(): Promise<ReloadResult>;
  statuses: MessageStatusStore;
  /** This replica's recent turns and outcomes per message (`GET /admin/messages/{id}`). */
  trail: MessageTrail;
  /** `audit.store_text`: what a message's path may show of its replies. */
  storeText: AuditConfig['storeText'];
  /** The rules in force with their hit counts: every tenant's, or one tenant's alone. */
  routing(tenant: string | null): RoutingView;
  /** The tenant whose channel `channelId` is (`default` for the top level and unknown ids). */
  tenantOfChannel(channelId: string): string;
  /** The ids of the pipelines of `tenant` (every pipeline's for null). */
  pipelinesOf(tenant: string | null): string[];
  /** The ids of the tenants configured now, `default` first. */
  tenantIds(): string[];
  /** The channels in force, for dry runs. */
  channels(): readonly ChannelConfig[];
  /** A dry run on the router in force (`POST /admin/route`). */
  dryRun(channel: ChannelConfig, input: DryRunInput): DryRunResult;
  /** The overview of the whole gateway, or of one tenant's channels, pipelines and outcomes. */
  overview(tenant: string | null): Promise<Overview>;
}

/**
 * The admin API (docs/design.md §7): audit and message search, a message's path, queue stats,
 * sessions (longest waiting, running turns) and the overview, dead letters (replay, purge, one or a selection), routing (rules with hits, dry
 * run, reload). The logic lives in named modules; the routes validate and answer. Bearer `admin.token`; without one it answers loopback clients only.
 */
export function registerAdminRoutes(server: FastifyInstance, deps: AdminDeps): void {
  server.register(
    async (admin) => {
      const routes = admin.withTypeProvider<ZodTypeProvider>();
      guardAdminScope(admin, deps.auth);
      const purgeAny = createDeadLetterPurge(deps.auditLog);
      /**
       * `act` on a dead letter the request's scope may see; another tenant's answers as an
       * unknown id does (404), so a tenant token learns nothing of it.
       */
      const ownDeadLetter =
        <Result>(request: FastifyRequest, act: (id: string) => Promise<Result>) =>
        async (id: string): Promise<Result> => {
          if (scopeOf(request).tenant !== null) {
            const record = await deps.auditLog.getDeadLetter(id);
            if (record === null || !mayAccess(request, record.tenant)) {
              throw new SwitchboardError('SB_DEAD_LETTER_NOT_FOUND', {
                message: `no dead letter with id ${id}`,
                details: { id },
              });
            }
          }
          return act(id);
        };

      const searchAudit = async (
        request: FastifyRequest<{ Querystring: z.output<typeof AdminAuditFiltersSchema> }>,
      ) => {
        const tenant = tenantFilterOf(request, request.query.tenant);
        const page = await deps.auditLog.query({
          ...request.query,
          ...(tenant === undefined ? {} : { tenant }),
        });
        return { items: page.items.map(auditView), next_cursor: page.nextCursor };
      };
      routes.get(
        '/audit',
        { config: TENANT, schema: { querystring: AdminAuditFiltersSchema, tags: ['admin'] } },
        searchAudit,
      );
      routes.get(
        '/messages',
        {
          config: TENANT,
          schema: {
            summary: 'Search the audit log (every outcome but completed and duplicate)',
            querystring: AdminAuditFiltersSchema,
            tags: ['admin'],
          },
        },
        searchAudit,
      );
      routes.get(
        '/messages/:id',
        {
          config: TENANT,
          schema: {
            summary: "A message's path: received, routed, merged, turns, replies, outcome",
            params: z.strictObject({ id: IdSchema }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const path = await messagePath(request.params.id, deps);
          if (!mayAccess(request, path.tenant ?? undefined)) {
            throw new SwitchboardError('SB_HTTP_NOT_FOUND', {
              message: `no message ${path.id} in the audit log, the status store or this replica's recent trail`,
              details: { id: path.id },
            });
          }
          return path;
        },
      );

      // Who the caller acts for, and the tenants it may pick (the console's tenant picker).
      routes.get(
        '/scope',
        {
          config: TENANT,
          schema: { summary: "The caller's scope: the whole gateway or one tenant", tags: ['admin'] },
        },
        async (request) => {
          const { tenant, label } = scopeOf(request);
          return { tenant, label, tenants: tenant === null ? deps.tenantIds() : [tenant] };
        },
      );

      routes.get(
        '/routing',
        {
          config: TENANT,
          schema: {
            summary:
              "The routing rules in order with hit counts since start (one tenant's alone: a tenant token's, or ?tenant=)",
            querystring: z.strictObject({ tenant: TenantFilter }),
            tags: ['admin'],
          },
        },
        async (request) => deps.routing(tenantFilterOf(request, request.query.tenant) ?? null),
      );
      routes.post(
        '/route',
        {
          config: TENANT,
          schema: {
            summary: 'Dry run: the rule and pipeline a message would get, and why',
            body: DryRunBodySchema,
            tags: ['admin'],
          },
        },
        async (request) => {
          const { channel: id, chat_type, chat_id, sender, text, mention, event } = request.body;
          // A tenant token dry-runs its own channels only, and is told of no other.
          const configured = deps
            .channels()
            .filter((known) => mayAccess(request, deps.tenantOfChannel(known.id)));
          const channel = configured.find((candidate) => candidate.id === id);
          if (channel === undefined) {
            const problem = `body.channel: no channel "${id}" (known: ${configured.map((known) => known.id).join(', ')})`;
            throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
              message: `invalid request: ${problem}`,
              details: { problems: [problem] },
            });
          }
          return deps.dryRun(channel, {
            chatType: chat_type,
            chatId: chat_id,
            ...(sender === undefined ? {} : { sender }),
            text,
            mention,
            ...(event === undefined ? {} : { event }),
          });
        },
      );

      routes.get(
        '/overview',
        {
          config: TENANT,
          schema: {
            summary:
              "The console's overview: rates, load, latency, channels (one tenant's: a tenant token's, or ?tenant=)",
            querystring: z.strictObject({ tenant: TenantFilter }),
            tags: ['admin'],
          },
        },
        async (request) => deps.overview(tenantFilterOf(request, request.query.tenant) ?? null),
      );

      // The pool's counts (cluster-wide with a shared pool), each pipeline that reports a state,
      // with a shared pool each replica: its heartbeat and the turns it runs (they add up to the
      // cluster's `inflight` unless a lease was just reclaimed), and which replica runs each
      // single-owner connection (docs/design.md §5).
      routes.get('/queues', { config: GATEWAY, schema: { tags: ['admin'] } }, async () => {
        const [stats, replicas, channels] = await Promise.all([
          deps.pool.stats(),
          deps.replicas?.(),
          deps.channelHolders(),
        ]);
        return {
          ...stats,
          pipelines: deps.pipelineStatuses(),
          ...(replicas === undefined
            ? {}
            : {
                replicas: replicas.map((replica) => ({
                  id: replica.id,
                  alive: replica.alive,
                  heartbeat_expires_at: replica.heartbeatExpiresAt,
                  turns_running: replica.turnsRunning,
                  // The fleet's configuration version it runs, and whether its file differs.
                  config:
                    replica.config === null
                      ? null
                      : {
                          version: replica.config.version,
                          state: replica.config.state,
                          ...(replica.config.detail === undefined ? {} : { detail: replica.config.detail }),
                        },
                })),
              }),
          channels: channels.map(({ id, type, role, lease }) => ({
            id,
            type,
            state: role,
            holder: lease?.holder ?? null,
            epoch: lease?.epoch ?? null,
            expires_at: lease?.expiresAt ?? null,
          })),
        };
      });

      // The longest-waiting ready sessions and every running turn with its age and, with a shared
      // pool, the replica running it (docs/design.md §7; cluster-wide with a shared pool).
      routes.get(
        '/sessions',
        {
          config: TENANT,
          schema: {
            querystring: z.strictObject({
              tenant: TenantFilter,
              limit: z.coerce
                .number()
                .int()
                .min(1)
                .max(MAX_SESSIONS_LISTED)
                .default(50)
                .describe('Waiting sessions listed at most; running turns are all listed.'),
            }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const tenant = tenantFilterOf(request, request.query.tenant);
          // One tenant's: its pipelines' ready sessions (another's backlog takes none of the
          // limit), then its channels' alone (a pipeline removed leaves its messages to `default`).
          const view = await deps.pool.sessions(
            request.query.limit,
            tenant === undefined ? undefined : deps.pipelinesOf(tenant),
          );
          const own = (entry: { session: string }) =>
            tenant === undefined || deps.tenantOfChannel(channelOfSession(entry.session)) === tenant;
          return {
            waiting: view.waiting.filter(own).map((entry) => ({
              session: entry.session,
              pipeline: entry.pipeline,
              pending: entry.pending,
              oldest_wait_ms: entry.oldestWaitMs,
            })),
            running: view.running.filter(own).map((turn) => ({
              turn_id: turn.turnId,
              session: turn.session,
              pipeline: turn.pipeline,
              messages: turn.messages,
              age_ms: turn.ageMs,
              replica: turn.replica,
              pending: turn.pending,
            })),
          };
        },
      );

      routes.get(
        '/dead-letters',
        {
          config: TENANT,
          schema: {
            querystring: z.strictObject({
              limit: z.coerce.number().int().min(1).max(1000).default(100),
              tenant: TenantFilter,
            }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const tenant = tenantFilterOf(request, request.query.tenant);
          const items = await deps.auditLog.deadLetters(request.query.limit, tenant);
          // `replayable: false`: kept without its whole text (audit.store_text), so replay answers 422.
          return {
            items: items.map((item) => ({
              ...auditView(item),
              replayable: item.payload?.replayable === true,
            })),
          };
        },
      );

      routes.post(
        '/dead-letters/:id/replay',
        { config: TENANT, schema: { params: z.strictObject({ id: IdSchema }), tags: ['admin'] } },
        async (request, reply) => {
          const replayed = await ownDeadLetter(request, deps.replay)(request.params.id);
          reply.code(202);
          return replayed;
        },
      );

      routes.delete(
        '/dead-letters/:id',
        {
          config: TENANT,
          schema: {
            summary: 'Purge one dead letter',
            params: z.strictObject({ id: IdSchema }),
            tags: ['admin'],
          },
        },
        async (request, reply) => {
          await ownDeadLetter(request, purgeAny)(request.params.id);
          return reply.code(204).send();
        },
      );
      routes.post(
        '/dead-letters/replay',
        {
          config: TENANT,
          schema: {
            summary: `Replay up to ${MAX_SELECTION} dead letters, one after the other`,
            body: SelectionSchema,
            tags: ['admin'],
          },
        },
        async (request) => ({
          results: await applyToSelection(request.body.ids, ownDeadLetter(request, deps.replay), request.log),
        }),
      );
      routes.post(
        '/dead-letters/purge',
        {
          config: TENANT,
          schema: {
            summary: `Purge up to ${MAX_SELECTION} dead letters`,
            body: SelectionSchema,
            tags: ['admin'],
          },
        },
        async (request) => ({
          results: await applyToSelection(request.body.ids, ownDeadLetter(request, purgeAny), request.log),
        }),
      );

      routes.post(
        '/reload',
        {
          config: GATEWAY,
          schema: {
            summary: 'Reload channels, pipelines, limits and routing from the config file',
            tags: ['admin'],
          },
        },
        async () => deps.reload(),
      );
    },
    { prefix: '/admin' },
  );
}
