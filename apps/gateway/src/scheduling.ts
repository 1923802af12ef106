import {
  type Controller,
  type HandoffDesk,
  type ControllerObserver,
  type ControllerOptions,
  type InboundMessage,
  type Ingress,
  type Logger,
  type MessageTracer,
  type OutcomeBus,
  type QueryPool,
  type ReplySender,
  type ReplySenderOptions,
  type Router,
  createController,
  createIngress,
  createQuotaCheck,
  createReplySender,
  createReplyStream,
  sendWithDeadline,
  startTyping,
  type TenantQuotas,
} from '@switchboard/core';
import type { Channels } from './channels.js';
import type { Pipelines } from './pipelines.js';
import type { Stores } from './stores.js';

/** What moves messages: admission into the pool, the turns out of it, the replies out of the outbox. */
export interface Scheduling {
  ingress: Ingress;
  controller: Controller;
  sender: ReplySender;
}

export interface SchedulingOptions {
  pool: QueryPool;
  pipelines: Pipelines;
  outcomes: OutcomeBus;
  stores: Stores;
  /** The clock deliveries are stamped and claimed by (`Stores.outboxNow`, else the host's). */
  outboxNow: () => number;
  /** The router in force. */
  router: () => Router;
  /** Channel id → its tenant, stamped on each message; undefined for `default`. */
  tenantOf: (channelId: string) => string | undefined;
  /** Tenant id → its quotas in force (docs/design.md §10); undefined for none. */
  quotasOf: (tenant: string) => TenantQuotas | undefined;
  /** Holds the turns of sessions in handoff (docs/design.md §2 "Handoff"). */
  handoffs: HandoffDesk;
  channels: Channels;
  /** The query as its pipeline gets it: media links added (media-links.ts). */
  queryFor?: ControllerOptions['queryFor'];
  /** Told of every turn's start, end and retry, and of stored replies. */
  observer: ControllerObserver;
  /** Told how each delivery ended (metrics). */
  deliveryEnded: NonNullable<ReplySenderOptions['observer']>['deliveryEnded'];
  logger: Logger;
  tracer?: MessageTracer;
}

/** Builds ingress, controller and reply sender over the pool; none starts anything yet. */
export function createScheduling(options: SchedulingOptions): Scheduling {
  const { pool, pipelines, outcomes, stores, outboxNow, channels, logger } = options;
  const { adapters, outboundPolicies, editIntervalMsOf } = channels;

  const ingress = createIngress({
    pool,
    router: options.router,
    outcomes,
    channelPolicy: channels.policyOf,
    tenantOf: options.tenantOf,
    refuseWhen: stores.refusal,
    quotas: {
      check: createQuotaCheck({ buckets: stores.quotaBuckets(), quotasOf: options.quotasOf }),
      replierOf: (channelId) => (channels.httpChannels.has(channelId) ? undefined : sendQuotaReply),
    },
    tracer: options.tracer,
  });

  /**
   * A tenant's `quota_reply`, sent straight through the message's channel: not a turn's reply, so
   * not through the outbox (no outcome follows it; the message's is `dropped`). Best effort: a
   * failed send is logged, and the next refusal in a later window tries again.
   */
  function sendQuotaReply(message: InboundMessage, text: string): void {
    const channel = adapters.get(message.channel);
    const timeoutMs = outboundPolicies.get(message.channel)?.sendTimeoutMs;
    if (channel === undefined || timeoutMs === undefined) return;
    sendWithDeadline(channel, message, [{ text }], timeoutMs).catch((err: unknown) =>
      logger.warn({ err, channel: message.channel, messageId: message.id }, 'quota reply not sent'),
    );
  }

  // Sends what the outbox holds, outside any turn (docs/design.md §2 "Outbox").
  const sender = createReplySender({
    outbox: stores.outbox,
    now: outboxNow,
    channel: (id) => adapters.get(id),
    policy: (id) => outboundPolicies.get(id),
    outcomes,
    logger,
    observer: { deliveryEnded: options.deliveryEnded },
  });

  const controller = createController({
    pool,
    pipelines: pipelines.pipelines,
    policies: pipelines.policies,
    outcomes,
    logger,
    tracer: options.tracer,
    // Answers are added through the sender: one this replica can send at once is claimed by its
    // add (docs/design.md §2 "Outbox"). Every other call goes to the outbox itself.
    outbox: { ...stores.outbox, add: (delivery) => sender.add(delivery) },
    // With a pool whose settlement stores the answer (`store: redis`), added through that write.
    addThrough: sender.addThrough,
    handoffs: options.handoffs,
    // Deliveries are stamped on the clock the sender claims them by (a skewed replica would hold
    // every reply back by its skew); the same clock as the host's unless the outbox is shared.
    now: outboxNow,
    // Answers stream into previews where the channel shows them (docs/design.md §4 "Streaming").
    streamReplies: (query, turnLogger) => {
      const preview = adapters.get(query.message.channel)?.preview;
      const editIntervalMs = editIntervalMsOf(query.message.channel);
      const finishTimeoutMs = outboundPolicies.get(query.message.channel)?.sendTimeoutMs;
      if (preview === undefined || editIntervalMs === undefined || finishTimeoutMs === undefined)
        return undefined;
      return createReplyStream({
        preview: (text, draft, signal) => preview(query.message, text, draft, signal),
        editIntervalMs,
        finishTimeoutMs,
        logger: turnLogger,
      });
    },
    // The bot shows typing while the pipeline works, where the channel can (docs/design.md §3 "Typing").
    typing: (query, turnLogger) => {
      const origin = query.message;
      const channel = adapters.get(origin.channel);
      if (channel?.typing === undefined || channel.typingIntervalMs === undefined) return undefined;
      if (!channels.typingOf(origin.channel)) return undefined;
      return startTyping({
        send: (signal) => channel.typing?.(origin, signal) ?? Promise.resolve(),
        intervalMs: channel.typingIntervalMs,
        logger: turnLogger,
      });
    },
    queryFor: options.queryFor,
    observer: options.observer,
  });

  return { ingress, controller, sender };
}
