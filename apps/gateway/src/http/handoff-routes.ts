import {
  AttachmentSchema,
  type Handoff,
  type HandoffDesk,
  type HandoffStore,
  type HistoryStore,
  type Logger,
  MAX_ATTACHMENTS_PER_REPLY,
  MAX_ATTACHMENT_BYTES,
  SwitchboardError,
  sessionAddressOf,
} from '@switchboard/core';
import type { AuthHook } from '@switchboard/http';
import { guardAdminScope, mayAccess, scopeOf, tenantFilterOf } from './admin-auth.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { entryView, handoffView } from '../admin/handoff-view.js';
import { type HandoffStreamLimits, createHandoffEventStreams } from './handoff-event-stream.js';

/** Longest session key taken in a path: platform, channel, chat type, chat and thread ids. */
const MAX_SESSION_KEY_CHARS = 1024;
/** Longest operator reply: the longest text any configured platform takes in one message is less. */
const MAX_REPLY_CHARS = 32_768;
/**
 * The largest reply request: one attachment's base64 at the cap with room for the rest, as a
 * pipeline's answer may be (the server's `body_limit` would refuse most files).
 */
const MAX_REPLY_BODY_BYTES = Math.ceil((MAX_ATTACHMENT_BYTES * 4) / 3) + 2 * 1024 * 1024;
/** Transcript entries `GET /admin/sessions/{key}` answers at most (the newest). */
const MAX_TRANSCRIPT_LISTED = 1000;
/** Bot history entries shown beside the transcript. */
const HISTORY_SHOWN = 20;
/** Sessions `GET /admin/handoffs` lists at most. */
const MAX_HANDOFFS_LISTED = 500;
/** Every route here answers within a tenant token's own tenant (docs/design.md §10). */
const TENANT = { tenancy: 'tenant' } as const;

const SessionParams = z.strictObject({
  key: z
    .string()
    .min(1)
    .max(MAX_SESSION_KEY_CHARS)
    .describe('The session key (URL-encoded), as `GET /admin/sessions` and the audit name it.'),
});

export interface HandoffRouteDeps {
  /** The admin check (`adminAuth`). */
  auth: AuthHook;
  desk: HandoffDesk;
  store: HandoffStore;
  history: HistoryStore;
  /** The tenant whose channel `channelId` is (`default` for the top level and unknown ids). */
  tenantOfChannel(channelId: string): string;
  streams: HandoffStreamLimits;
  logger: Logger;
}

/** The channel of the session key of the path, checked to be one (400 naming it otherwise). */
function channelOfKey(key: string): string {
  try {
    return sessionAddressOf(key).channel;
  } catch (error) {
    const problem = `params.key: ${error instanceof Error ? error.message : String(error)}`;
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: `invalid request: ${problem}`,
      details: { problems: [problem] },
    });
  }
}

/**
 * The operator's routes of the admin API (docs/design.md §7 "Handoff"): the inbox, a session's
 * conversation and its live stream, taking a session over, replying, handing it back.
 */
export function registerHandoffRoutes(server: FastifyInstance, deps: HandoffRouteDeps): void {
  const { desk, store } = deps;
  /**
   * Whose a session is: its handoff's tenant, the one it began under (a channel moved to another
   * tenant leaves its open handoffs behind); else — no handoff, or one begun before handoffs named
   * their tenant — its channel's.
   */
  const tenantOfSession = (session: string, handoff: Handoff | null) =>
    handoff?.tenant ?? deps.tenantOfChannel(channelOfKey(session));

  /**
   * The session of the path and its handoff, when the session is of the request's scope: another
   * tenant's answers 404, as an unknown one would, so a tenant token learns nothing of it.
   */
  async function sessionIn(request: FastifyRequest, key: string) {
    channelOfKey(key);
    const handoff = await store.get(key);
    if (!mayAccess(request, tenantOfSession(key, handoff))) {
      throw new SwitchboardError('SB_HTTP_NOT_FOUND', {
        message: `no session ${key} among the sessions of tenant ${scopeOf(request).tenant}`,
      });
    }
    return { session: key, handoff };
  }
  const streams = createHandoffEventStreams(store, deps.streams, deps.logger);
  server.addHook('preClose', (done) => {
    streams.closeAll();
    done();
  });

  server.register(
    async (admin) => {
      const routes = admin.withTypeProvider<ZodTypeProvider>();
      guardAdminScope(admin, deps.auth);

      routes.get(
        '/handoffs',
        {
          config: TENANT,
          schema: {
            summary: 'The operator inbox: sessions in handoff, the longest waiting first',
            querystring: z.strictObject({
              limit: z.coerce.number().int().min(1).max(MAX_HANDOFFS_LISTED).default(50),
              tenant: z
                .string()
                .min(1)
                .max(MAX_SESSION_KEY_CHARS)
                .optional()
                .describe("Only this tenant's sessions; a tenant's admin token reads its own only."),
            }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const tenant = tenantFilterOf(request, request.query.tenant);
          if (tenant === undefined)
            return { items: (await store.list(request.query.limit)).map(handoffView) };
          // One tenant's: read as many as may be listed, keep its own, then cut to the limit.
          const own = (await store.list(MAX_HANDOFFS_LISTED)).filter(
            (handoff) => tenantOfSession(handoff.session, handoff) === tenant,
          );
          return { items: own.slice(0, request.query.limit).map(handoffView) };
        },
      );

      routes.get(
        '/sessions/:key',
        {
          config: TENANT,
          schema: {
            summary: "A session's handoff, its transcript and the bot's recent history",
            params: SessionParams,
            tags: ['admin'],
          },
        },
        async (request) => {
          const { session, handoff } = await sessionIn(request, request.params.key);
          const transcript =
            handoff === null
              ? []
              : await store.transcript(
                  session,
                  Math.max(0, handoff.lastSeq - MAX_TRANSCRIPT_LISTED),
                  MAX_TRANSCRIPT_LISTED,
                );
          const history =
            handoff?.pipeline == null
              ? []
              : await deps.history.recent(session, handoff.pipeline, HISTORY_SHOWN);
          return {
            session,
            handoff: handoff === null ? null : handoffView(handoff),
            transcript: transcript.map(entryView),
            history,
          };
        },
      );

      routes.get(
        '/sessions/:key/events',
        {
          config: TENANT,
          schema: {
            summary: "A session's handoff and transcript as they change (text/event-stream)",
            params: SessionParams,
            querystring: z.strictObject({
              after: z.coerce
                .number()
                .int()
                .min(0)
                .default(0)
                .describe('The last transcript seq already read.'),
            }),
            tags: ['admin'],
          },
        },
        async (request, reply) => {
          const { session } = await sessionIn(request, request.params.key);
          const stillAllowed = (handoff: Handoff | null) =>
            scopeOf(request).held() && mayAccess(request, tenantOfSession(session, handoff));
          reply.hijack();
          try {
            streams.open(session, request.query.after, reply.raw, stillAllowed, scopeOf(request).tenant);
          } catch (error) {
            reply.raw.statusCode = 429;
            reply.raw.setHeader('content-type', 'application/json');
            reply.raw.end(
              JSON.stringify({
                error: { code: 'SB_HTTP_TOO_MANY_REQUESTS', message: (error as Error).message },
              }),
            );
          }
        },
      );

      routes.post(
        '/sessions/:key/handoff',
        {
          config: TENANT,
          schema: {
            summary: 'Take a session over from the bot',
            params: SessionParams,
            body: z.strictObject({ reason: z.string().min(1).max(500).optional() }).default({}),
            tags: ['admin'],
          },
        },
        async (request, reply) => {
          const { session } = await sessionIn(request, request.params.key);
          const operator = scopeOf(request).label;
          const { handoff, created } = await desk.begin(session, {
            tenant: deps.tenantOfChannel(channelOfKey(session)),
            reason: request.body.reason ?? `taken over by ${operator}`,
            by: `operator:${operator}`,
          });
          reply.code(created ? 201 : 200);
          return { handoff: handoffView(handoff), created };
        },
      );

      routes.delete(
        '/sessions/:key/handoff',
        {
          config: TENANT,
          schema: {
            summary: 'Hand a session back to the bot',
            params: SessionParams,
            body: z
              .strictObject({
                resume: z
                  .enum(['bot', 'skip'])
                  .default('bot')
                  .describe('bot: the held messages go to the bot as one turn; skip: they stay handled.'),
              })
              .default({ resume: 'bot' }),
            tags: ['admin'],
          },
        },
        async (request) => {
          const { session } = await sessionIn(request, request.params.key);
          const ended = await desk.end(session, { resume: request.body.resume });
          if (ended === null) throw new SwitchboardError('SB_HANDOFF_NOT_FOUND');
          return { resumed: ended.resumed, held: ended.held, message_id: ended.messageId };
        },
      );

      routes.post(
        '/sessions/:key/replies',
        {
          bodyLimit: MAX_REPLY_BODY_BYTES,
          config: TENANT,
          schema: {
            summary: "Send the user an operator's reply (through the outbox, like the bot's)",
            params: SessionParams,
            body: z
              .strictObject({
                text: z.string().trim().min(1).max(MAX_REPLY_CHARS).optional(),
                attachments: z
                  .array(AttachmentSchema)
                  .max(MAX_ATTACHMENTS_PER_REPLY)
                  .optional()
                  .describe("Files sent before the text, as a pipeline's reply carries them."),
                id: z
                  .string()
                  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1 to 64 letters, digits, _ -')
                  .optional()
                  .describe('Picked by the caller: a repeated request with the same id is sent once.'),
              })
              .refine((body) => body.text !== undefined || (body.attachments?.length ?? 0) > 0, {
                message: 'needs a text or at least one attachment',
              }),
            tags: ['admin'],
          },
        },
        async (request, reply) => {
          const { session } = await sessionIn(request, request.params.key);
          const operator = scopeOf(request).label;
          const { id, text, attachments } = request.body;
          const sent = await desk.reply(session, {
            operator,
            ...(text === undefined ? {} : { text }),
            ...(attachments === undefined ? {} : { attachments }),
            ...(id === undefined ? {} : { id }),
          });
          reply.code(202);
          return { id: sent.id, delivery_id: sent.deliveryId };
        },
      );
    },
    { prefix: '/admin' },
  );
}
