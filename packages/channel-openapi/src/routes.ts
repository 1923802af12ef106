import {
  type Ingress,
  type IngressResult,
  type MessageStatus,
  type MessageStatusStore,
  SwitchboardError,
  TRACEPARENT_PATTERN,
  crashPoint,
  isFinalStatus,
  newMessageId,
  traceIdOf,
} from '@switchboard/core';
import {
  ErrorBodySchema,
  IDEMPOTENCY_TTL_MS,
  bearerAuth,
  credentialIdOf,
  httpErrorHandler,
  idempotencyFingerprint,
  jsonBodyParser,
  notFoundHandler,
  validatorCompiler,
} from '@switchboard/http';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  COMMON_ERROR_RESPONSES,
  MessageParamsSchema,
  type MessageView,
  MessageViewSchema,
  type PostMessageBody,
  PostMessageHeadersSchema,
  SessionParamsSchema,
  postMessageBodySchema,
} from './api-schemas.js';
import type { OpenApiChannelConfig } from './options.js';
import { createKeyedSerializer } from './keyed-serializer.js';
import { toInboundMessage } from './normalize.js';
import { limitConcurrentRequests } from './request-limit.js';
import { SSE_HEADERS, type SseHub } from './sse.js';
import { emptyStatus } from './status-from-outcome.js';
import type { StatusTracker } from './status-tracker.js';
import type { StatusWatch } from './status-waiters.js';

/** The wait suggested while the channel is not running: a start or a restart takes seconds. */
const NOT_RUNNING_RETRY_AFTER_MS = 5000;
/** Named in the OpenAPI document and in `WWW-Authenticate`. */
const SECURITY = [{ bearerAuth: [] }];

/** What the routes need from the channel. */
export interface RouteContext {
  config: OpenApiChannelConfig;
  statuses: MessageStatusStore;
  tracker: StatusTracker;
  sse: SseHub;
  /** The ingress while the channel runs; null before `start` and after `stop`. */
  ingress(): Ingress | null;
  /** With a shared pool: this replica's id, stamped on the messages accepted here (`ChannelEvents.replicaId`). */
  replicaId?: string;
  now(): number;
}

/** The answer to a `POST …/messages`: 200 when the message is final, else 202. */
interface Answer {
  statusCode: 200 | 202;
  body: MessageView;
}

function viewOf(status: MessageStatus, reason?: string): MessageView {
  // The channel and its tenant are the caller's own: what the stored status keeps for operators.
  const {
    updated_at: _updatedAt,
    channel: _channel,
    generation: _generation,
    tenant: _tenant,
    ...view
  } = status;
  return reason === undefined ? view : { ...view, reason };
}

function answerOf(status: MessageStatus, reason?: string): Answer {
  return { statusCode: isFinalStatus(status) ? 200 : 202, body: viewOf(status, reason) };
}

/** The answer for an ingress result that is final at once (discarded, ignored). */
function immediateAnswer(
  id: string,
  traceId: string | null,
  result: Extract<IngressResult, { status: 'discarded' | 'ignored' }>,
): Answer {
  const base = {
    id,
    pipeline: null,
    rule: null,
    turn: null,
    replies: [],
    delivery: null,
    error: null,
    trace_id: traceId,
  };
  switch (result.status) {
    case 'discarded':
      return { statusCode: 200, body: { ...base, status: 'discarded', rule: result.rule } };
    case 'ignored':
      return { statusCode: 200, body: { ...base, status: 'ignored', reason: result.reason } };
  }
}

/** The answer for a message still queued: `wait=false`, or the wait timed out before its outcome. */
function queuedAnswer(
  id: string,
  traceId: string | null,
  result: Extract<IngressResult, { status: 'queued' }>,
): Answer {
  return {
    statusCode: 202,
    body: {
      id,
      status: 'queued',
      pipeline: result.pipeline,
      rule: result.rule,
      turn: null,
      replies: [],
      delivery: null,
      error: null,
      trace_id: traceId,
    },
  };
}

function refusal(result: Extract<IngressResult, { status: 'refused' }>): SwitchboardError {
  return result.reason === 'queue_full'
    ? new SwitchboardError('SB_QUEUE_FULL', {
        message: 'the queue is full; retry after the Retry-After delay',
        retryAfterMs: result.retryAfterMs,
      })
    : new SwitchboardError('SB_DRAINING', { retryAfterMs: result.retryAfterMs });
}

/** A request's `Idempotency-Key` and the caller it belongs to. */
interface Idempotency {
  key: string;
  /** `credentialIdOf` the request. */
  credential: string;
}

/**
 * What defines the message of a `POST …/messages`, as the fingerprint its `Idempotency-Key` is
 * bound with: the parsed body (defaults applied, so an omitted `chat_type` and `"person"` are one
 * request) without `wait` and `timeout_ms`, which say how the caller waits for the answer, not
 * what it asks: a retry may wait less, or not at all, and still be the same request.
 */
function fingerprintOf(body: PostMessageBody): string {
  return idempotencyFingerprint([
    body.session_id,
    body.user_id,
    body.text,
    body.user_name ?? null,
    body.chat_type,
  ]);
}

/** What came of the admission step: a message accepted now, or the one an idempotency key names. */
type Admission =
  | {
      kind: 'accepted';
      id: string;
      /** `InboundMessage.tenant` as ingress stamped it (absent for `default`). */
      tenant: string | undefined;
      traceId: string | null;
      result: IngressResult;
      watch: StatusWatch;
    }
  | { kind: 'replay'; status: MessageStatus };

/**
 * The channel's routes as one encapsulated plugin (docs/design.md §3 "openapi"): its own zod
 * validation, error handler, 404 answer and hooks — not running → 503, authentication, and the
 * cap on requests in flight (event streams excepted) — leave the rest of the server untouched.
 */
export function channelRoutes(context: RouteContext): FastifyPluginAsync {
  const { config, statuses, tracker, sse } = context;
  const bodySchema = postMessageBodySchema(config.maxWaitTimeoutMs);
  // Requests carrying the same Idempotency-Key are admitted one at a time, so that a retry racing
  // the first request finds its message instead of accepting a second one.
  const keyed = createKeyedSerializer();

  /** The 503 to answer while the channel is not running, or undefined when it is. */
  function notRunning(): SwitchboardError | undefined {
    if (context.ingress() !== null) return undefined;
    return new SwitchboardError('SB_DRAINING', {
      message: `channel ${config.id} is not running (starting or shutting down)`,
      retryAfterMs: NOT_RUNNING_RETRY_AFTER_MS,
    });
  }

  function runningIngress(): Ingress {
    const ingress = context.ingress();
    if (ingress === null) throw notRunning();
    return ingress;
  }

  async function accept(
    id: string,
    body: PostMessageBody,
    traceparent: string | undefined,
    idempotencyKey?: string,
  ): Promise<Admission> {
    const message = toInboundMessage(body, {
      id,
      channelId: config.id,
      idempotencyKey,
      receivedAt: context.now(),
      traceparent,
      acceptedBy: context.replicaId,
    });
    const watch = tracker.watch(id);
    try {
      // A keyed request is deduplicated by its message id too: when replicas race on one key, the
      // loser enqueues the id the winner bound, and the pool answers `duplicate` if it got there first.
      const result = await runningIngress().accept(message, idempotencyKey === undefined ? undefined : id);
      // Ingress points the message at its receive span when tracing is on, and clears it when off.
      const traceId = traceIdOf(message.traceparent);
      if (result.status === 'queued')
        tracker.queued(id, { pipeline: result.pipeline, rule: result.rule, traceId, tenant: message.tenant });
      return { kind: 'accepted', id, tenant: message.tenant, traceId, result, watch };
    } catch (error) {
      watch.cancel();
      throw error;
    }
  }

  /**
   * A keyed request is its caller's own (docs/design.md §3 "openapi"): the key is bound per
   * channel and credential, with the request's fingerprint, in one atomic claim (PostgreSQL's
   * upsert with `store: redis`, so on every replica). The same key from another caller is another
   * key; from the same caller with another body, a 422.
   */
  function admit(
    body: PostMessageBody,
    traceparent: string | undefined,
    idempotency: Idempotency | undefined,
  ): Promise<Admission> {
    if (idempotency === undefined) return accept(newMessageId(), body, traceparent);
    const { key, credential } = idempotency;
    return keyed.run(JSON.stringify([credential, key]), async () => {
      const id = newMessageId();
      const fingerprint = fingerprintOf(body);
      const bound = await statuses.claimIdempotencyKey({
        channel: config.id,
        credential,
        key,
        fingerprint,
        messageId: id,
        ttlMs: IDEMPOTENCY_TTL_MS,
      });
      crashPoint('ingress.after-idempotency-key');
      if (bound === null) return accept(id, body, traceparent, key);
      if (bound.fingerprint !== fingerprint) {
        throw new SwitchboardError('SB_IDEMPOTENCY_KEY_REUSED', {
          message:
            'this Idempotency-Key was sent before with another request (session_id, user_id, text, user_name or chat_type differ); send a new message with a new key',
        });
      }
      const status = await tracker.current(bound.messageId);
      // No status: the first request was refused or failed before its message was accepted.
      return status === null ? accept(bound.messageId, body, traceparent, key) : { kind: 'replay', status };
    });
  }

  /** Waits up to `timeoutMs` for a message already accepted, as a first request would. */
  async function awaitFinal(watch: StatusWatch, id: string, timeoutMs: number): Promise<Answer | null> {
    const final = await watch.wait(timeoutMs);
    if (final !== null) return answerOf(final.status, final.reason);
    const status = await tracker.current(id);
    return status === null ? null : answerOf(status);
  }

  async function replay(status: MessageStatus, wait: boolean, timeoutMs: number): Promise<Answer> {
    if (!wait || isFinalStatus(status)) return answerOf(status);
    const watch = tracker.watchAccepted(status.id);
    // The outcome may have landed between the first read and the watch.
    const latest = await tracker.current(status.id);
    if (latest !== null && isFinalStatus(latest)) {
      watch.cancel();
      return answerOf(latest);
    }
    return (await awaitFinal(watch, status.id, timeoutMs)) ?? answerOf(latest ?? status);
  }

  async function postMessage(
    body: PostMessageBody,
    traceparent: string | undefined,
    idempotency: Idempotency | undefined,
  ): Promise<Answer> {
    const timeoutMs = body.timeout_ms ?? config.waitTimeoutMs;
    // W3C trace context: a malformed traceparent is ignored, not refused.
    const inbound =
      traceparent !== undefined && TRACEPARENT_PATTERN.test(traceparent) ? traceparent : undefined;
    const admission = await admit(body, inbound, idempotency);
    if (admission.kind === 'replay') return replay(admission.status, body.wait, timeoutMs);

    const { id, tenant, traceId, result, watch } = admission;
    if (result.status === 'duplicate') {
      // Another request bound to the same Idempotency-Key enqueued this id first (on another
      // replica, or before a restart): answer as its repeat.
      watch.cancel();
      const status = await tracker.current(id);
      return replay(status ?? emptyStatus(id, config.id, tenant, context.now()), body.wait, timeoutMs);
    }
    if (result.status === 'refused') {
      watch.cancel();
      throw refusal(result);
    }
    if (result.status === 'dropped') {
      // Final, unlike a refusal: recorded `dropped`/`quota`, so a retry is a new message.
      watch.cancel();
      throw new SwitchboardError('SB_QUOTA_EXCEEDED', {
        message: "a quota of this channel's tenant is used up; retry after the Retry-After delay",
        retryAfterMs: result.retryAfterMs,
      });
    }
    if (result.status !== 'queued') {
      // The outcome was recorded during `accept`: the tracker holds it until its write lands, so
      // a GET agrees at once.
      watch.cancel();
      return immediateAnswer(id, traceId, result);
    }
    if (!body.wait) {
      watch.cancel();
      return queuedAnswer(id, traceId, result);
    }
    return (await awaitFinal(watch, id, timeoutMs)) ?? queuedAnswer(id, traceId, result);
  }

  return async (scope: FastifyInstance) => {
    scope.setValidatorCompiler(validatorCompiler);
    // Answers are built by this file and typed by the response schemas at compile time; checking
    // them again with zod on every response cost 8% of the gateway's CPU
    // (bench/HISTORY.md#tuning-pass-2-maps-and-the-journal).
    scope.setSerializerCompiler(() => (data) => JSON.stringify(data));
    scope.setErrorHandler(httpErrorHandler);
    scope.setNotFoundHandler(notFoundHandler);
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
    scope.addHook('onRequest', (_request, _reply, done) => done(notRunning()));
    scope.addHook(
      'onRequest',
      bearerAuth({ tokens: config.apiKeys, realm: 'switchboard', setting: 'api_keys' }),
    );
    scope.addHook('preClose', async () => sse.closeAll());

    scope.withTypeProvider<ZodTypeProvider>().get(
      '/sessions/:session_id/events',
      {
        schema: {
          summary: 'Stream the replies sent to a session (server-sent events)',
          description:
            'Each reply is an `event: reply` whose data is `{"message_id","turn","text"?,"attachments"?}` (a reply as the pipeline gave it: a text, attachments `{type,url|data,name?,mime_type?}`, or both); a comment line every 15 s keeps the stream open. ' +
            'While a streaming pipeline writes an answer, `event: reply.delta` events come first, at most one per `outbound.edit_interval`, with data `{"message_id","turn","delta"}`: the text added since the previous delta of that message (their concatenation is the answer so far). The `reply` events that follow carry the whole answer, once. ' +
            'Any caller the channel admits (any API key, or loopback without keys) may follow any session: session ids are not secrets the API checks, so give each end user an id others cannot guess, or keep the key on your server. ' +
            'An event larger than `max_event_stream_buffer` on its own goes as `event: reply.omitted` with data `{"message_id","turn","event","bytes"}` instead: read that message with `GET /messages/{id}`. ' +
            'Streams are bounded by `max_event_streams` and `max_event_streams_per_session` (429 past them), and a client that does not read is disconnected once more than `max_event_stream_buffer` bytes of earlier events wait unsent.',
          tags: ['sessions'],
          security: SECURITY,
          params: SessionParamsSchema,
          response: {
            200: {
              description: 'An endless text/event-stream.',
              content: { 'text/event-stream': { schema: z.string() } },
            },
            ...COMMON_ERROR_RESPONSES,
            429: ErrorBodySchema.describe(
              'Too many event streams open, on the channel or for the conversation the path names.',
            ),
          },
        },
      },
      async (request, reply) => {
        // HEAD shares the GET route: the headers of a stream, and the end of the answer.
        if (request.method === 'HEAD') return reply.headers(SSE_HEADERS).send('');
        // Throws 429 past a limit, before anything is written: the error handler answers.
        sse.open(request.params.session_id, reply.raw);
        // Hijacked: fastify neither serializes nor ends this response; the stream owns it.
        reply.hijack();
      },
    );

    // Event streams live for hours; only the request/response routes count toward the cap.
    await scope.register(async (limited) => {
      limitConcurrentRequests(limited, config.maxConcurrentRequests);
      const api = limited.withTypeProvider<ZodTypeProvider>();

      api.post(
        '/messages',
        {
          schema: {
            summary: 'Send a message; by default wait for its replies',
            tags: ['messages'],
            security: SECURITY,
            headers: PostMessageHeadersSchema,
            body: bodySchema,
            response: {
              200: MessageViewSchema.describe(
                'The message is final: completed, discarded, ignored, dropped…',
              ),
              202: MessageViewSchema.describe('Accepted; still queued or running (wait=false or timed out).'),
              ...COMMON_ERROR_RESPONSES,
              413: ErrorBodySchema.describe('The body is larger than the server accepts.'),
              422: ErrorBodySchema.describe(
                'SB_IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was sent before, by this caller on this channel, with another request.',
              ),
            },
          },
        },
        async (request, reply) => {
          const key = request.headers['idempotency-key'];
          const idempotency =
            key === undefined ? undefined : { key, credential: credentialIdOf(request, config.apiKeys) };
          const answer = await postMessage(request.body, request.headers.traceparent, idempotency);
          return reply.code(answer.statusCode).send(answer.body);
        },
      );

      api.get(
        '/messages/:id',
        {
          schema: {
            summary: 'The status and replies of a message',
            tags: ['messages'],
            security: SECURITY,
            params: MessageParamsSchema,
            response: {
              200: MessageViewSchema,
              404: ErrorBodySchema.describe('No message with this id (never accepted, or pruned).'),
              ...COMMON_ERROR_RESPONSES,
            },
          },
        },
        async (request) => {
          const status = await tracker.current(request.params.id);
          if (status === null) {
            throw new SwitchboardError('SB_HTTP_NOT_FOUND', {
              message: `no message with id ${request.params.id}`,
            });
          }
          return viewOf(status);
        },
      );
    });
  };
}
