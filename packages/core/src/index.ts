// The public surface of @switchboard/core, grouped by the stages of the message flow
// (docs/design.md §1), then the ports, the in-memory stores and the building blocks.

// Model: the message and its queued form, session key and ids, how a message ends, coded errors
export {
  AttachmentSchema,
  ChatTypeSchema,
  DEFAULT_TENANT,
  ELEMENT_TYPES,
  EVENT_TYPES,
  ElementSchema,
  HandoffContextSchema,
  InboundEventSchema,
  InboundMessageSchema,
  AttachmentSummarySchema,
  MAX_ATTACHMENTS_PER_REPLY,
  MAX_ATTACHMENT_BYTES,
  MEDIA_TYPES,
  PipelineAnswerSchema,
  ReplySchema,
  answerResult,
  attachmentSummaryOf,
  base64Bytes,
  isMediaElement,
  newMessageId,
  parseInboundMessage,
  replyText,
  tenantOfMessage,
  withoutRaw,
} from './model/message.js';
export type {
  Attachment,
  AttachmentSummary,
  ChatType,
  Element,
  ElementType,
  EventType,
  HandoffContext,
  InboundEvent,
  InboundMessage,
  InboundMessageInput,
  MediaElement,
  MediaType,
  Reply,
  SessionReplies,
} from './model/message.js';
export { TRACEPARENT_PATTERN, traceIdOf } from './model/traceparent.js';
export type { QueuedMessage } from './model/queued-message.js';
export { sessionAddressOf, sessionKeyOf } from './model/session-key.js';
export type { SessionAddress, SessionKey, SessionScope } from './model/session-key.js';
export { UNPAIRED_SURROGATE, hasUnpairedSurrogate } from './model/unpaired-surrogate.js';
export { requestIdOf, turnIdOf } from './model/turn-id.js';
export {
  OUTCOME_KINDS,
  OUTCOME_REASONS,
  createOutcomeBus,
  maskedOutcome,
  overflowOutcomeOf,
  recordOverflowed,
} from './model/outcome.js';
export type {
  KeptOutcome,
  Outcome,
  OutcomeBus,
  OutcomeKind,
  OutcomeListener,
  OutcomeReason,
  OutcomeSink,
  UndeliveredReplies,
} from './model/outcome.js';
export { auditIdOf, outcomeKeyOf } from './model/outcome-id.js';
export { ERROR_CODES, SwitchboardError, isSwitchboardError } from './model/errors.js';
export type { ErrorCode, SwitchboardErrorOptions } from './model/errors.js';
export { formatIssues, formatPath, parseOrThrow } from './model/validation.js';

// Inbound: admission, routing, ingress
export { GroupPolicySchema, admit } from './inbound/admission.js';
export type { AdmissionDecision, AdmissionPolicy } from './inbound/admission.js';
export {
  DISCARD,
  HANDOFF,
  IGNORE_EVENT,
  RoutingConditionSchema,
  RoutingSchema,
  createRouter,
} from './inbound/router.js';
export type {
  RouteDecision,
  RouteExplanation,
  RouteTraceStep,
  Router,
  RoutingCondition,
  RoutingConfig,
  RoutingConfigInput,
  RoutingRule,
} from './inbound/router.js';
export { createIngress } from './inbound/ingress.js';
export {
  MAX_QUOTAS_PER_TENANT,
  QUOTA_SCOPES,
  QuotaReplySchema,
  QuotaSchema,
  QuotasSchema,
  createQuotaCheck,
} from './inbound/quota.js';
export type {
  Quota,
  QuotaCheck,
  QuotaCheckOptions,
  QuotaScope,
  QuotaVerdict,
  TenantQuotas,
} from './inbound/quota.js';
export type {
  ChannelPolicy,
  Ingress,
  IngressDropReason,
  IngressOptions,
  IngressRefusal,
  IngressResult,
} from './inbound/ingress.js';

// Scheduling: pipeline policies, aggregation, the controller and how a turn ends
export {
  AggregationSchema,
  ConcurrencySchema,
  PipelinePolicyFields,
  PipelinePolicySchema,
  QueueLimitsSchema,
  RetrySchema,
  toPipelinePolicy,
} from './scheduling/pipeline-policy.js';
export type {
  Concurrency,
  PipelinePolicy,
  PipelinePolicyInput,
  PoolPipelinePolicy,
  QueueLimits,
} from './scheduling/pipeline-policy.js';
export { TenantShareFields, defaultTenantShare, tenantShareOf } from './scheduling/tenant-share.js';
export type { TenantShare } from './scheduling/tenant-share.js';
export { aggregate } from './scheduling/aggregator.js';
export type { Query } from './scheduling/aggregator.js';
export { backoffDelayMs, retryDelayMs } from './scheduling/backoff.js';
export type { BackoffPolicy } from './scheduling/backoff.js';
export { createController } from './scheduling/controller.js';
export type { Controller, ControllerOptions } from './scheduling/controller.js';
export type { ControllerObserver, TurnResult } from './scheduling/controller-observer.js';

// Outbound: the reply sender, pacing, send deadlines, streamed previews, long texts cut
export { deliveryOf } from './outbound/delivery.js';
export { createReplySender } from './outbound/reply-sender.js';
export type {
  DeliveryResult,
  OutboundPolicy,
  ReplySender,
  ReplySenderOptions,
} from './outbound/reply-sender.js';
export { UNPACED, createSendPacer, pacedChatOf } from './outbound/send-pacer.js';
export type { BucketRate, PacedChat, SendPacer, SendPacerOptions, SendRates } from './outbound/send-pacer.js';
export { sendWithDeadline } from './outbound/send-deadline.js';
export { createReplyStream } from './outbound/reply-stream.js';
export type { ReplyStream, ReplyStreamOptions, ShowPreview } from './outbound/reply-stream.js';
export { startTyping } from './outbound/typing-indicator.js';
export type { SendTyping, TypingIndicator, TypingIndicatorOptions } from './outbound/typing-indicator.js';
export { splitText } from './outbound/split-text.js';

// Observability: message traces, secrets marked on their schemas and masked wherever text leaves
export { createMessageTracer } from './observability/message-trace.js';
export type { MessageTracer } from './observability/message-trace.js';
export { isSecretField, secretEntries, secretField, secretValues } from './observability/secret-fields.js';
export type { SecretEntry } from './observability/secret-fields.js';
export type { ProbeResult } from './observability/probe-result.js';
export { MIN_MASKED_CHARS, SECRET_MASK, createSecretMasker } from './observability/secret-masker.js';
export type { SecretMasker } from './observability/secret-masker.js';
// Test-only: the crash points of the reliability suite (`SWITCHBOARD_CRASH_AT`, docs/RELIABILITY.md)
export { CRASH_POINTS, crashAfter, crashPoint, parseCrashAt } from './observability/crash-point.js';
export type { CrashAt, CrashPoint } from './observability/crash-point.js';

// Ports: what channels, pipelines and stores implement
export { AUDIT_EQUALITY_FILTERS, AUDIT_RECORD_FIELDS } from './ports/audit-log.js';
export type { AuditLog, AuditPage, AuditQuery, AuditRecord, DeadLetterPayload } from './ports/audit-log.js';
export { decodeAuditCursor, encodeAuditCursor } from './ports/audit-cursor.js';
export type { AuditCursor } from './ports/audit-cursor.js';
export type {
  ChannelAdapter,
  ChannelContext,
  ChannelHealth,
  ChannelSendOptions,
} from './ports/channel-adapter.js';
export type { MediaDownload, MediaRef } from './ports/media.js';
export type { ChannelLease, ChannelLeases, LeaseTiming } from './ports/channel-lease.js';
export type {
  Handoff,
  HandoffEntry,
  HandoffStart,
  HandoffStore,
  HoldResult,
  OperatorReplyEntry,
} from './ports/handoff-store.js';
export { newHandoff, replyEntryOf } from './ports/handoff-store.js';
export type { HistoryEntry, HistoryStore } from './ports/history-store.js';
export type { AppendResult, Journal } from './ports/journal.js';
export { lazyChild, silentLogger } from './ports/logger.js';
export type { Logger } from './ports/logger.js';
export {
  DELIVERY_STATES,
  MESSAGE_STATUSES,
  isFinalStatus,
  replacesStatus,
  statusFromStore,
  statusRank,
  statusVersion,
} from './ports/message-status-store.js';
export type {
  IdempotencyBinding,
  IdempotencyClaim,
  MessageStatus,
  MessageStatusStore,
  StatusRank,
  StoredMessageStatus,
} from './ports/message-status-store.js';
export { IGNORING_OBSERVER } from './ports/outbound-observer.js';
export type { OutboundObserver } from './ports/outbound-observer.js';
export type { Pipeline, PipelineResult, PipelineRunContext, PipelineStatus } from './ports/pipeline.js';
export type {
  ClaimedTurn,
  DeliveryKey,
  EnqueueResult,
  PoolStats,
  PooledMessageState,
  PoolConfig,
  QueryPool,
  RunningTurn,
  SessionsView,
  SettledReplies,
  SettleOptions,
  Turn,
  TurnLease,
  TurnStart,
  WaitingSession,
} from './ports/query-pool.js';
export type { Settlement } from './ports/settlement.js';
export { MAX_BUCKETS_PER_TAKE, bucketKey } from './ports/rate-buckets.js';
export type { BucketAttempt, BucketScope, RateBucket, RateBuckets } from './ports/rate-buckets.js';
export type {
  AddAndClaimResult,
  AddResult,
  ClaimedDelivery,
  Delivery,
  DeliveryClaim,
  DeliveryError,
  DeliveryMessage,
  EndAndClaimResult,
  ReplyOutbox,
} from './ports/reply-outbox.js';
export { turnStartOf } from './ports/replica-events.js';
export type { ReplicaEvents } from './ports/replica-events.js';

// Handoff: sessions an operator took over
export { createHandoffDesk } from './handoff/handoff-desk.js';
export type {
  HandoffDesk,
  HandoffDeskOptions,
  HandoffEnd,
  HandoffObserver,
  OperatorReply,
  TurnHold,
} from './handoff/handoff-desk.js';
export { HandoffSettingsSchema } from './handoff/handoff-settings.js';
export type { HandoffResume, HandoffSettings } from './handoff/handoff-settings.js';
export { HANDOFF_POLICY } from './handoff/handoff-policy.js';

// In-memory stores (`store: memory`, tests, benchmarks)
export { createMemoryAuditLog } from './memory/memory-audit-log.js';
export { createMemoryChannelLeases } from './memory/memory-channel-leases.js';
export { createMemoryHandoffStore } from './memory/memory-handoff-store.js';
export { createMemoryHistoryStore } from './memory/memory-history-store.js';
export type { MemoryHistoryStoreOptions } from './memory/memory-history-store.js';
export { createMemoryJournal } from './memory/memory-journal.js';
export type { MemoryJournalOptions } from './memory/memory-journal.js';
export { createMemoryMessageStatusStore } from './memory/memory-message-status-store.js';
export type { MemoryMessageStatusStoreOptions } from './memory/memory-message-status-store.js';
export { createMemoryQueryPool } from './memory/memory-query-pool.js';
export type { MemoryQueryPoolOptions } from './memory/memory-query-pool.js';
export { createMemoryRateBuckets } from './memory/memory-rate-buckets.js';
export type { MemoryRateBucketsOptions } from './memory/memory-rate-buckets.js';
export { createMemoryReplyOutbox } from './memory/memory-reply-outbox.js';
export { createMemoryReplicaEvents } from './memory/memory-replica-events.js';
export type { MemoryReplicaEvents, MemoryReplicaEventsOptions } from './memory/memory-replica-events.js';

// Structures: queues, heaps and timers the stores and the scheduler are built from
export { CountedKeys } from './structures/counted-keys.js';
export { Fifo } from './structures/fifo.js';
export { type HeapNode, IndexedHeap } from './structures/indexed-heap.js';
export { WakeTimer } from './structures/wake-timer.js';
export { pause } from './structures/pause.js';
export { within } from './structures/within.js';

// Schema: values the YAML writes as text (human durations, numbers)
export { durationMs, parseDurationMs } from './schema/duration.js';
export type { DurationBounds } from './schema/duration.js';
export { numeric } from './schema/numeric.js';
export { byteSize, parseByteSize } from './schema/byte-size.js';

// Media: the signed links of `GET /v1/media/{token}` (docs/design.md §2 "Media")
export { mediaKeyOf, mediaTokenChannel, signMediaToken, verifyMediaToken } from './media/media-token.js';
export type { MediaClaims } from './media/media-token.js';

// Packaging: the files a package ships beside its code (migrations, Lua scripts)
export { packageFolder } from './packaging/package-folder.js';
