import type { AuthHook } from '@switchboard/http';
import type { AuditLog, PipelineStatus, QueryPool } from '@switchboard/core';
import type { ReplicaView } from '@switchboard/store-redis';
import type { OwnedChannels } from '../channel-ownership.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { auditView } from '../audit-view.js';
import { AuditFiltersSchema } from '../audit-filters.js';

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
  replay(id: string): Promise<{ id: string; message_id: string; status: 'queued' }>;
  /** Re-reads the config file and swaps the routing rules; throws SB_CONFIG_INVALID and keeps the old rules. */
  reload(): Promise<{ rules: number }>;
}

/**
 * The admin API (docs/design.md §7): audit search, queue stats, dead letters and their replay, routing
 * reload. Bearer `admin.token`; without one it answers loopback clients only.
 */
export function registerAdminRoutes(server: FastifyInstance, deps: AdminDeps): void {
  server.register(
    async (admin) => {
      const routes = admin.withTypeProvider<ZodTypeProvider>();
      // onRequest, not preHandler: a stranger's bad query must get 401, not a 400 describing the route.
      admin.addHook('onRequest', deps.auth);

      routes.get(
        '/audit',
        { schema: { querystring: AuditFiltersSchema, tags: ['admin'] } },
        async (request) => {
          const page = await deps.auditLog.query(request.query);
          return {
            items: page.items.map(auditView),
            next_cursor: page.nextCursor,
          };
        },
      );

      // The pool's counts (cluster-wide with a shared pool), each pipeline that reports a state,
      // with a shared pool each replica: its heartbeat and the turns it runs (they add up to the
      // cluster's `inflight` unless a lease was just reclaimed), and which replica runs each
      // single-owner connection (docs/design.md §5).
      routes.get('/queues', { schema: { tags: ['admin'] } }, async () => {
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

      routes.get(
        '/dead-letters',
        {
          schema: {
            querystring: z.strictObject({ limit: z.coerce.number().int().min(1).max(1000).default(100) }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const items = await deps.auditLog.deadLetters(request.query.limit);
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
        { schema: { params: z.strictObject({ id: z.string().min(1) }), tags: ['admin'] } },
        async (request, reply) => {
          reply.code(202);
          return deps.replay(request.params.id);
        },
      );

      routes.post('/reload', { schema: { tags: ['admin'] } }, async () => deps.reload());
    },
    { prefix: '/admin' },
  );
}
