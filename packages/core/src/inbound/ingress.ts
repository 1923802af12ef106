import type { Span } from '@opentelemetry/api';
import { type AdmissionPolicy, admit } from './admission.js';
import { crashPoint } from '../observability/crash-point.js';
import { SwitchboardError, isSwitchboardError } from '../model/errors.js';
import type { InboundMessage } from '../model/message.js';
import type { MessageTracer } from '../observability/message-trace.js';
import { type OutcomeSink, recordOverflowed } from '../model/outcome.js';
import type { QueryPool } from '../ports/query-pool.js';
import type { QuotaCheck } from './quota.js';
import { DISCARD, IGNORE_EVENT, type Router } from './router.js';
import { type SessionKey, type SessionScope, sessionKeyOf } from '../model/session-key.js';

/** How one channel admits and keys its messages (`channels[].group`, `session_scope`). */
export interface ChannelPolicy {
  admission: AdmissionPolicy;
  sessionScope: SessionScope;
}

export interface IngressOptions {
  pool: QueryPool;
  /** The current router; a getter so that a routing reload takes effect on the next message. */
  router: () => Router;
  outcomes: OutcomeSink;
  /** Channel id → its policy; unknown channels get the defaults. */
  channelPolicy: (channelId: string) => ChannelPolicy;
  /**
   * Channel id → the tenant it belongs to, stamped on each message before it is judged (so its
   * outcomes and its queued copy carry it); undefined for the tenant `default`. Default: none.
   */
  tenantOf?: (channelId: string) => string | undefined;
  /** How long a delivery id is remembered by the pool. Default: 24 h. */
  dedupTtlMs?: number;
  /**
   * Asked at the start of every `accept`; when it answers, `accept` throws `SB_STORE_UNAVAILABLE`
   * with its `retryAfterMs` (HTTP 503 + `Retry-After`; platforms that redeliver are not
   * acknowledged) and judges, records and enqueues nothing. The gateway answers while the audit
   * outbox is full (docs/design.md §5 "Several replicas"): the check runs before judging because
   * judging records outcomes, which are audited too. Called once per message, so keep it cheap
   * (a cached flag). Default: never refuses.
   */
  refuseWhen?: () => IngressRefusal | undefined;
  /**
   * Tenants' quotas (docs/design.md §10), taken once per message that would run: after
   * admission and routing (an ignored or discarded message takes nothing), before the enqueue.
   * Default: none.
   */
  quotas?: {
    check: QuotaCheck;
    /**
     * Channel id → what sends a tenant's `quota_reply` in answer to a message (best effort, not
     * awaited); undefined for a channel that answers a refusal itself (HTTP: 429).
     */
    replierOf(channelId: string): ((message: InboundMessage, text: string) => void) | undefined;
  };
  /** Traces each message from here on; absent when tracing is off. */
  tracer?: MessageTracer;
  now?: () => number;
}

/** Why `accept` refuses every message for now (see `IngressOptions.refuseWhen`). */
export interface IngressRefusal {
  /** Becomes the error's message, e.g. `audit outbox is full`. */
  reason: string;
  /** When the client should try again (ms). */
  retryAfterMs: number;
}

export type IngressResult =
  | { status: 'queued'; pipeline: string; session: SessionKey; rule: string | null }
  | { status: 'duplicate' }
  | { status: 'ignored'; reason: 'bot_author' | 'not_mentioned' | 'unrouted_event' }
  | { status: 'discarded'; rule: string }
  | { status: 'refused'; reason: 'queue_full' | 'draining'; retryAfterMs: number }
  /** Past a quota of its tenant: final (recorded `dropped`/`quota`); HTTP answers 429. */
  | { status: 'dropped'; reason: 'quota'; retryAfterMs: number };

/**
 * The inbound half of the message flow (docs/design.md §1): admission → routing → durable enqueue,
 * which also deduplicates. Every message that enters leaves with exactly one result; all but
 * `queued` are final and recorded here, `queued` ones are finished by the controller. A channel
 * acknowledges its platform only after `accept` resolves, so that an accepted message is already
 * journaled.
 *
 * Dedup lives in the pool's enqueue so that marking a delivery id seen and journaling its message
 * are one write: marked first and journaled later, a crash between the two turned the platform's
 * redelivery into a `duplicate` while the message was never journaled (lost). So only deliveries
 * that reach the pool are remembered: a redelivered ignored or discarded message is judged again
 * and gets the same outcome again, which runs nothing twice.
 */
export interface Ingress {
  /**
   * `deliveryId` is the platform's redelivery key (update_id, event_id…); omit it when the
   * platform never redelivers.
   */
  accept(message: InboundMessage, deliveryId?: string, options?: { last?: boolean }): Promise<IngressResult>;
  /**
   * Records `message` as dropped when its channel gave up on it and its platform will never
   * deliver it again: `refused` (the queue stayed full, or the gateway was draining, until the
   * channel stopped) or `ingress_failed` (`accept` threw; `error` says why). Channels whose
   * platform redelivers answer it so that it does, instead. A message that admission would
   * ignore or routing discard gets that outcome instead: a dropped one is one the pool missed.
   */
  drop(message: InboundMessage, reason: IngressDropReason, error?: unknown): void;
}

/** Why a channel gave up on a message it received (see `Ingress.drop`). */
export type IngressDropReason = 'refused' | 'ingress_failed';

/** `accept` reaches only the dedup store and the pool, so an uncoded failure is theirs. */
function describeIngressError(error: unknown): { code: string; message: string } {
  if (isSwitchboardError(error)) return { code: error.code, message: error.message };
  return {
    code: 'SB_STORE_UNAVAILABLE',
    message: error instanceof Error ? error.message : String(error),
  };
}

const DEFAULT_DEDUP_TTL_MS = 24 * 3_600_000;

export function createIngress(options: IngressOptions): Ingress {
  const { pool, outcomes } = options;
  const now = options.now ?? Date.now;
  const dedupTtlMs = options.dedupTtlMs ?? DEFAULT_DEDUP_TTL_MS;
  const { tracer } = options;

  /**
   * Admission, then routing: records and returns the final result when they decide the message
   * (ignored, discarded), else returns where it goes. `received`: the message's receive span.
   */
  function judge(message: InboundMessage, received?: Span) {
    if (options.tenantOf !== undefined) {
      // Whatever a channel put there: only the channel's configuration says whose it is.
      const tenant = options.tenantOf(message.channel);
      if (tenant === undefined) delete message.tenant;
      else message.tenant = tenant;
    }
    const policy = options.channelPolicy(message.channel);
    const session = sessionKeyOf(message, policy.sessionScope);
    const router = options.router();
    const route =
      received === undefined || tracer === undefined
        ? router.route(message)
        : tracer.route(received, message, () => router.route(message));
    const rule = route.rule ?? undefined;
    if (route.pipeline === IGNORE_EVENT) {
      // Before admission: an unrouted event is ignored as such, whoever sent it and wherever.
      outcomes.record({ message, session, kind: 'ignored', reason: 'unrouted_event', at: now() });
      return { session, final: { status: 'ignored', reason: 'unrouted_event' } as const };
    }
    const admission = admit(message, policy.admission, route.routedByRule);
    if (!admission.admitted) {
      outcomes.record({ message, session, kind: 'ignored', reason: admission.reason, rule, at: now() });
      return { session, final: { status: 'ignored', reason: admission.reason } as const };
    }
    if (route.pipeline === DISCARD) {
      outcomes.record({ message, session, kind: 'discarded', reason: 'rule', rule, at: now() });
      return { session, final: { status: 'discarded', rule: route.rule ?? DISCARD } as const };
    }
    return { session, route, rule, final: undefined };
  }

  async function accept(
    message: InboundMessage,
    deliveryId: string | undefined,
    acceptOptions: { last?: boolean } | undefined,
    received: Span | undefined,
  ): Promise<IngressResult> {
    const refusal = options.refuseWhen?.();
    if (refusal !== undefined) {
      throw new SwitchboardError('SB_STORE_UNAVAILABLE', {
        message: refusal.reason,
        retryable: true,
        retryAfterMs: refusal.retryAfterMs,
      });
    }
    const judged = judge(message, received);
    if (judged.final !== undefined) return judged.final;
    const { session, route, rule } = judged;
    const delivery =
      deliveryId === undefined ? undefined : { key: `${message.channel}:${deliveryId}`, ttlMs: dedupTtlMs };
    let giveBack: (() => Promise<void>) | undefined;
    if (options.quotas !== undefined) {
      // Before the enqueue, which deduplicates: so a refusal asks the pool whether the delivery
      // was already accepted, and a redelivery ends `duplicate` as the enqueue would have said.
      // A message the pool then does not take (refused, a duplicate, a failed store) gets its
      // tokens back, so that the retries of one message do not use its sender's quota up.
      const replier = options.quotas.replierOf(message.channel);
      const redelivered = delivery === undefined ? undefined : () => pool.seen(delivery.key);
      const verdict = await options.quotas.check.take(message, session, replier !== undefined, redelivered);
      if (!verdict.allowed) {
        if (verdict.redelivered === true) {
          outcomes.record({ message, session, kind: 'duplicate', reason: 'redelivery', at: now() });
          return { status: 'duplicate' };
        }
        outcomes.record({ message, session, kind: 'dropped', reason: 'quota', rule, at: now() });
        if (verdict.reply !== undefined) replier?.(message, verdict.reply);
        return { status: 'dropped', reason: 'quota', retryAfterMs: verdict.retryAfterMs };
      }
      giveBack = verdict.giveBack;
    }
    // A give-back that fails (the store is away) leaves the token taken: one message's worth.
    const returnTokens = () => giveBack?.().catch(() => undefined);

    let result: Awaited<ReturnType<typeof pool.enqueue>>;
    try {
      result = await pool.enqueue(
        {
          message,
          session,
          pipeline: route.pipeline,
          routedByRule: route.routedByRule,
          rule,
          attempt: 0,
          acceptedAt: now(),
        },
        delivery,
        acceptOptions,
      );
    } catch (error) {
      await returnTokens();
      throw error;
    }
    if (!result.accepted) {
      await returnTokens();
      if (result.reason === 'duplicate') {
        outcomes.record({ message, session, kind: 'duplicate', reason: 'redelivery', at: now() });
        return { status: 'duplicate' };
      }
      return { status: 'refused', reason: result.reason, retryAfterMs: result.retryAfterMs };
    }
    recordOverflowed(outcomes, result.overflowed, now());
    crashPoint('ingress.after-journal');
    return { status: 'queued', pipeline: route.pipeline, session, rule: route.rule };
  }

  return {
    async accept(message, deliveryId, acceptOptions) {
      if (tracer === undefined) {
        // Only a traced message keeps a caller's context: untraced, nothing would continue it.
        if (message.traceparent !== undefined) message.traceparent = undefined;
        return accept(message, deliveryId, acceptOptions, undefined);
      }
      // A refused or failed message may be offered again (a channel's retry): its next receive
      // span continues the caller's context, not this one's.
      const callerContext = message.traceparent;
      const received = tracer.receive(message);
      try {
        const result = await accept(message, deliveryId, acceptOptions, received);
        tracer.received(received, result.status);
        if (result.status === 'refused') message.traceparent = callerContext;
        return result;
      } catch (error) {
        tracer.received(received, 'failed', error);
        message.traceparent = callerContext;
        throw error;
      }
    },

    drop(message, reason, error) {
      const judged = judge(message);
      if (judged.final !== undefined) return;
      const { session } = judged;
      outcomes.record({
        kind: 'dropped',
        reason,
        at: now(),
        message,
        session,
        ...(error === undefined ? {} : { error: describeIngressError(error) }),
      });
    },
  };
}
