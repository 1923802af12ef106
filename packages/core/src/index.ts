// The public surface of @switchboard/core, grouped by the message flow of docs/design.md §1.

// Message model
export {
  ChatTypeSchema,
  ELEMENT_TYPES,
  ElementSchema,
  InboundMessageSchema,
  ReplySchema,
  newMessageId,
  parseInboundMessage,
} from './message.js';
export type {
  ChatType,
  Element,
  ElementType,
  InboundMessage,
  InboundMessageInput,
  Reply,
  SessionReplies,
} from './message.js';
export { sessionKeyOf } from './session-key.js';
export { splitText } from './split-text.js';
export { UNPAIRED_SURROGATE, hasUnpairedSurrogate } from './unpaired-surrogate.js';
export type { SessionKey, SessionScope } from './session-key.js';

// Inbound: admission, routing, ingress
export { GroupPolicySchema, admit } from './admission.js';
export type { AdmissionDecision, AdmissionPolicy } from './admission.js';
export { DISCARD, RoutingConditionSchema, RoutingSchema, createRouter } from './router.js';
export type {
  RouteDecision,
  RouteExplanation,
  RouteTraceStep,
  Router,
  RoutingCondition,
  RoutingConfig,
  RoutingConfigInput,
  RoutingRule,
} from './router.js';
export { createIngress } from './ingress.js';
export { TRACEPARENT_PATTERN, createMessageTracer, traceIdOf } from './message-trace.js';
export type { MessageTracer } from './message-trace.js';
export type {
  ChannelPolicy,
  Ingress,
  IngressDropReason,
  IngressOptions,
  IngressRefusal,
  IngressResult,
} from './ingress.js';

// Scheduling: pool, aggregator, controller
export {
  AggregationSchema,
  ConcurrencySchema,
  PipelinePolicyFields,
  PipelinePolicySchema,
  QueueLimitsSchema,
  RetrySchema,
  toPipelinePolicy,
} from './pipeline-policy.js';
export type {
  Concurrency,
  PipelinePolicy,
  PipelinePolicyInput,
  PoolPipelinePolicy,
  QueueLimits,
} from './pipeline-policy.js';
export { Fifo } from './structures/fifo.js';
export { type HeapNode, IndexedHeap } from './structures/indexed-heap.js';
export { WakeTimer } from './structures/wake-timer.js';
export { createMemoryQueryPool } from './memory/memory-query-pool.js';
export type { MemoryQueryPoolOptions } from './memory/memory-query-pool.js';
export { aggregate } from './aggregator.js';
export type { Query } from './aggregator.js';
export { requestIdOf, turnIdOf } from './turn-id.js';
export { backoffDelayMs, retryDelayMs } from './backoff.js';
export type { BackoffPolicy } from './backoff.js';
export { createController } from './controller.js';
export type { Controller, ControllerObserver, ControllerOptions, TurnResult } from './controller.js';

// Outcomes
export {
  OUTCOME_KINDS,
  OUTCOME_REASONS,
  createOutcomeBus,
  maskedOutcome,
  overflowOutcomeOf,
  recordOverflowed,
} from './outcome.js';
export { auditIdOf, outcomeKeyOf } from './outcome-id.js';
export type {
  KeptOutcome,
  Outcome,
  OutcomeBus,
  OutcomeKind,
  OutcomeListener,
  OutcomeReason,
  OutcomeSink,
  UndeliveredReplies,
} from './outcome.js';

// Ports
export { decodeAuditCursor, encodeAuditCursor } from './audit-cursor.js';
export type { AuditCursor } from './audit-cursor.js';
export { AUDIT_EQUALITY_FILTERS, AUDIT_RECORD_FIELDS } from './ports/audit-log.js';
export type { AuditLog, AuditPage, AuditQuery, AuditRecord, DeadLetterPayload } from './ports/audit-log.js';
export type {
  ChannelAdapter,
  ChannelContext,
  ChannelHealth,
  ChannelSendOptions,
} from './ports/channel-adapter.js';
export type { ChannelLease, ChannelLeases } from './ports/channel-lease.js';
export { IGNORING_OBSERVER } from './ports/outbound-observer.js';
export type { OutboundObserver } from './ports/outbound-observer.js';
export { MAX_BUCKETS_PER_TAKE, bucketKey } from './ports/rate-buckets.js';
export type { BucketScope, RateBucket, RateBuckets } from './ports/rate-buckets.js';
export { sendWithDeadline } from './send-deadline.js';
export { UNPACED, createSendPacer, pacedChatOf } from './send-pacer.js';
export type { BucketRate, PacedChat, SendPacer, SendPacerOptions, SendRates } from './send-pacer.js';
export { deliveryOf } from './delivery.js';
export { createReplySender } from './reply-sender.js';
export type { DeliveryResult, OutboundPolicy, ReplySender, ReplySenderOptions } from './reply-sender.js';
export { pause } from './structures/pause.js';
export type { HistoryEntry, HistoryStore } from './ports/history-store.js';
export type { AppendResult, Journal } from './ports/journal.js';
export type {
  AddResult,
  Delivery,
  DeliveryClaim,
  DeliveryError,
  DeliveryMessage,
  ReplyOutbox,
} from './ports/reply-outbox.js';
export { lazyChild, silentLogger } from './ports/logger.js';
export type { Logger } from './ports/logger.js';
export {
  DELIVERY_STATES,
  MESSAGE_STATUSES,
  isFinalStatus,
  replacesStatus,
  statusRank,
  statusVersion,
} from './ports/message-status-store.js';
export type {
  IdempotencyBinding,
  IdempotencyClaim,
  MessageStatus,
  MessageStatusStore,
  StatusRank,
} from './ports/message-status-store.js';
export type { Pipeline, PipelineResult, PipelineRunContext, PipelineStatus } from './ports/pipeline.js';
export type {
  DeliveryKey,
  EnqueueResult,
  PoolStats,
  PooledMessageState,
  QueryPool,
  RunningTurn,
  SessionsView,
  Settlement,
  Turn,
  TurnLease,
  TurnStart,
  WaitingSession,
} from './ports/query-pool.js';
export type { QueuedMessage } from './ports/queued-message.js';
export { turnStartOf } from './ports/replica-events.js';
export type { ReplicaEvents } from './ports/replica-events.js';

// In-memory stores (`store: memory`, tests, benchmarks)
export { createMemoryAuditLog } from './memory/memory-audit-log.js';
export { createMemoryChannelLeases } from './memory/memory-channel-leases.js';
export { createMemoryRateBuckets } from './memory/memory-rate-buckets.js';
export type { MemoryRateBucketsOptions } from './memory/memory-rate-buckets.js';
export type { MemoryChannelLeasesOptions } from './memory/memory-channel-leases.js';
export { createMemoryHistoryStore } from './memory/memory-history-store.js';
export type { MemoryHistoryStoreOptions } from './memory/memory-history-store.js';
export { createMemoryJournal } from './memory/memory-journal.js';
export type { MemoryJournalOptions } from './memory/memory-journal.js';
export { createMemoryReplyOutbox } from './memory/memory-reply-outbox.js';
export { createMemoryMessageStatusStore } from './memory/memory-message-status-store.js';
export type { MemoryMessageStatusStoreOptions } from './memory/memory-message-status-store.js';
export { createMemoryReplicaEvents } from './memory/memory-replica-events.js';
export type { MemoryReplicaEvents, MemoryReplicaEventsOptions } from './memory/memory-replica-events.js';

// Errors, durations, validation
export { ERROR_CODES, SwitchboardError, isSwitchboardError } from './errors.js';
export type { ErrorCode, SwitchboardErrorOptions } from './errors.js';
export { durationMs, parseDurationMs } from './duration.js';
export type { DurationBounds } from './duration.js';
export { numeric } from './numeric.js';
export { formatIssues, formatPath, parseOrThrow } from './validation.js';

// Secrets: marked on their schemas, masked wherever text leaves the process
export { isSecretField, secretEntries, secretField, secretValues } from './secret-fields.js';
export type { SecretEntry } from './secret-fields.js';
export { MIN_MASKED_CHARS, SECRET_MASK, createSecretMasker } from './secret-masker.js';
export type { SecretMasker } from './secret-masker.js';
export { within } from './within.js';
export { packageFolder } from './package-folder.js';
export { createReplyStream } from './reply-stream.js';
export type { ReplyStream, ReplyStreamOptions, ShowPreview } from './reply-stream.js';

// Test-only: the crash points of the reliability suite (`SWITCHBOARD_CRASH_AT`, docs/RELIABILITY.md)
export { CRASH_POINTS, crashAfter, crashPoint, parseCrashAt } from './crash-point.js';
export type { CrashAt, CrashPoint } from './crash-point.js';
