import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { Context, Link, Span, Tracer } from '@opentelemetry/api';
import type { Query } from '../scheduling/aggregator.js';
import { type InboundMessage, type Reply, tenantOfMessage } from '../model/message.js';
import type { PipelinePolicy } from '../scheduling/pipeline-policy.js';
import type { Turn } from '../ports/query-pool.js';
import type { QueuedMessage } from '../model/queued-message.js';
import type { RouteDecision } from '../inbound/router.js';
import { isSwitchboardError } from '../model/errors.js';

/**
 * The spans of a message's way through the gateway (docs/design.md §2 "Tracing"), on the
 * OpenTelemetry API: one trace per message — receive → route, then per turn that runs it a
 * debounce wait and a queue wait, and the turn (per attempt) → pipeline call, deliveries. A merged
 * message's waits link to the turn that ran it, and the turn links back to each merged message.
 *
 * The message's context crosses the pool as `InboundMessage.traceparent`, journaled and queued
 * with it, so that a turn run by another replica or after a restart joins the same trace.
 *
 * Callers hold a `MessageTracer | undefined`: with tracing off there is none, so an untraced
 * message pays one check per step and no span, context or header is made. Parents are passed
 * explicitly rather than through an active context: an AsyncLocalStorage context manager would
 * tax every promise of the process, traced or not.
 */
export interface MessageTracer {
  /**
   * Starts `message`'s receive span, a child of the caller's trace when `message.traceparent`
   * names one, and points `message.traceparent` at it. End it with `received`.
   */
  receive(message: InboundMessage): Span;
  /**
   * Runs the routing decision of `message` in a `route` span under `received`, recording its rule;
   * both spans record the tenant ingress stamped on it.
   */
  route(received: Span, message: InboundMessage, decide: () => RouteDecision): RouteDecision;
  /** Ends the receive span with how ingress decided the message (`queued`, `ignored`…). */
  received(span: Span, result: string, error?: unknown): void;
  /**
   * Starts the span of one attempt at `turn`, claimed at `claimedAt` (ms), and records how long
   * each of its messages waited (debounce, queue) until then. The caller ends it.
   */
  startTurn(turn: Turn, policy: PipelinePolicy | undefined, claimedAt: number): Span;
  /**
   * Runs the pipeline in a client span under `turnSpan`; `run` gets that span as W3C headers
   * (`traceparent`) for the backend.
   */
  pipelineCall<T>(
    turnSpan: Span,
    pipeline: string,
    run: (headers: Record<string, string>) => Promise<T>,
  ): Promise<T>;
  /** Runs one delivery of replies in a span under `turnSpan`. */
  delivery(turnSpan: Span, query: Query, replies: readonly Reply[], run: () => Promise<void>): Promise<void>;
  /** `trace_id` and `span_id` of `span`, for the log lines written under it. */
  logFields(span: Span): { trace_id: string; span_id: string };
}

/** Semantic attribute names of Switchboard's spans. */
const ATTR = {
  channel: 'switchboard.channel',
  tenant: 'switchboard.tenant',
  platform: 'switchboard.platform',
  messageId: 'switchboard.message.id',
  result: 'switchboard.result',
  rule: 'switchboard.rule',
  pipeline: 'switchboard.pipeline',
  turnId: 'switchboard.turn.id',
  attempt: 'switchboard.attempt',
  messages: 'switchboard.messages',
  replies: 'switchboard.replies',
} as const;

/**
 * When a first-attempt message could leave debounce: the pool's rule (`dueAtOf`), from the
 * turn's run of messages; never after the claim.
 */
function debouncedAt(turn: Turn, policy: PipelinePolicy, claimedAt: number): number {
  const { aggregation } = policy;
  let last = 0;
  for (const queued of turn.messages) last = Math.max(last, queued.acceptedAt);
  const head = turn.messages[0] as QueuedMessage;
  const due = Math.min(last + aggregation.delayMs, head.acceptedAt + aggregation.maxWaitMs);
  return Math.min(due, claimedAt);
}

/**
 * The engine's tracer over `tracer`; `mask` hides secrets in the error texts spans record. `api`
 * is the `@opentelemetry/api` module, passed in by the app that started tracing, so that a
 * process without tracing never loads it.
 */
export function createMessageTracer(
  api: Pick<
    typeof OpenTelemetryApi,
    'ROOT_CONTEXT' | 'SpanKind' | 'SpanStatusCode' | 'propagation' | 'trace'
  >,
  tracer: Tracer,
  mask: (text: string) => string = (text) => text,
): MessageTracer {
  const { ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, trace } = api;

  function contextOf(traceparent: string | undefined): Context {
    return traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent });
  }

  /** `span` as W3C trace context headers. */
  function headersOf(span: Span): Record<string, string> {
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
    return carrier;
  }

  /**
   * Marks `span` failed with the error's code and masked message, never its stack: spans go to a
   * collector outside the gateway, and a platform's error text may quote a secret (a token in a URL).
   */
  function failed(span: Span, error: unknown): void {
    const message = mask(error instanceof Error ? error.message : String(error));
    const name = isSwitchboardError(error) ? error.code : error instanceof Error ? error.name : 'Error';
    span.recordException({ name, message });
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  /** A span from `startMs` to `endMs` that has already happened. */
  function past(
    name: string,
    parent: Context,
    startMs: number,
    endMs: number,
    links: Link[],
    messageId: string,
  ) {
    tracer
      .startSpan(name, { startTime: startMs, links, attributes: { [ATTR.messageId]: messageId } }, parent)
      .end(Math.max(startMs, endMs));
  }

  /** Each message's waits, in its own trace; a merged message's link to the turn span. */
  function waits(turn: Turn, policy: PipelinePolicy | undefined, claimedAt: number, turnSpan: Span): void {
    const debounced = policy?.aggregation.enabled ? debouncedAt(turn, policy, claimedAt) : undefined;
    const head = turn.messages[0];
    for (const queued of turn.messages) {
      const parent = contextOf(queued.message.traceparent);
      const links = queued === head ? [] : [{ context: turnSpan.spanContext() }];
      const { id } = queued.message;
      // A retried message waited on its backoff, not on debounce: its wait starts when it was due.
      if (queued.attempt > 1) {
        past('queue wait', parent, queued.retryAtMs ?? claimedAt, claimedAt, links, id);
        continue;
      }
      if (debounced === undefined) {
        past('queue wait', parent, queued.acceptedAt, claimedAt, links, id);
        continue;
      }
      past('debounce wait', parent, queued.acceptedAt, debounced, links, id);
      past('queue wait', parent, Math.max(queued.acceptedAt, debounced), claimedAt, links, id);
    }
  }

  return {
    receive(message) {
      const span = tracer.startSpan(
        `receive ${message.channel}`,
        {
          kind: SpanKind.CONSUMER,
          attributes: {
            [ATTR.channel]: message.channel,
            [ATTR.platform]: message.platform,
            [ATTR.messageId]: message.id,
          },
        },
        contextOf(message.traceparent),
      );
      message.traceparent = headersOf(span).traceparent;
      return span;
    },

    route(received, message, decide) {
      const tenant = { [ATTR.tenant]: tenantOfMessage(message) };
      received.setAttributes(tenant);
      const span = tracer.startSpan('route', { attributes: tenant }, trace.setSpan(ROOT_CONTEXT, received));
      try {
        const decision = decide();
        span.setAttributes({ [ATTR.rule]: decision.rule ?? '', [ATTR.pipeline]: decision.pipeline });
        return decision;
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    received(span, result, error) {
      span.setAttribute(ATTR.result, result);
      if (error !== undefined) failed(span, error);
      span.end();
    },

    startTurn(turn, policy, claimedAt) {
      const head = turn.messages[0] as QueuedMessage;
      const links = turn.messages
        .slice(1)
        .map((queued) => ({ context: trace.getSpanContext(contextOf(queued.message.traceparent)) }))
        .filter((link): link is Link => link.context !== undefined);
      const span = tracer.startSpan(
        'turn',
        {
          startTime: claimedAt,
          links,
          attributes: {
            [ATTR.turnId]: turn.id,
            [ATTR.tenant]: tenantOfMessage(head.message),
            [ATTR.attempt]: turn.attempt,
            [ATTR.pipeline]: turn.pipeline,
            [ATTR.messages]: turn.messages.length,
          },
        },
        contextOf(head.message.traceparent),
      );
      waits(turn, policy, claimedAt, span);
      return span;
    },

    async pipelineCall(turnSpan, pipeline, run) {
      const span = tracer.startSpan(
        `pipeline ${pipeline}`,
        { kind: SpanKind.CLIENT, attributes: { [ATTR.pipeline]: pipeline } },
        trace.setSpan(ROOT_CONTEXT, turnSpan),
      );
      try {
        return await run(headersOf(span));
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    async delivery(turnSpan, query, replies, run) {
      const span = tracer.startSpan(
        `deliver ${query.message.channel}`,
        {
          kind: SpanKind.PRODUCER,
          attributes: { [ATTR.channel]: query.message.channel, [ATTR.replies]: replies.length },
        },
        trace.setSpan(ROOT_CONTEXT, turnSpan),
      );
      try {
        await run();
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    logFields(span) {
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
}
