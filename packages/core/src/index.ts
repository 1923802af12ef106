// The public surface of @switchboard/core, grouped by the message flow of DESIGN §1.

export type { AdmissionDecision, AdmissionPolicy } from './admission.js';
// Inbound: admission, routing, ingress
export { admit, GroupPolicySchema } from './admission.js';
export type { Query } from './aggregator.js';
export { aggregate } from './aggregator.js';
export { durationMs, parseDurationMs } from './duration.js';
export type { ErrorCode, SwitchboardErrorOptions } from './errors.js';
// Errors, durations, validation
export { ERROR_CODES, isSwitchboardError, SwitchboardError } from './errors.js';
export type { ChannelPolicy, Ingress, IngressOptions, IngressResult } from './ingress.js';
export { createIngress } from './ingress.js';
export type {
  ChatType,
  Element,
  ElementType,
  InboundMessage,
  InboundMessageInput,
  Reply,
} from './message.js';
// Message model
export {
  ChatTypeSchema,
  ELEMENT_TYPES,
  ElementSchema,
  InboundMessageSchema,
  newMessageId,
  parseInboundMessage,
  ReplySchema,
} from './message.js';
export type {
  Outcome,
  OutcomeBus,
  OutcomeKind,
  OutcomeListener,
  OutcomeReason,
  OutcomeSink,
} from './outcome.js';
// Outcomes
export { createOutcomeBus, OUTCOME_KINDS, OUTCOME_REASONS } from './outcome.js';
export type { Concurrency, PipelinePolicy, PipelinePolicyInput, QueueLimits } from './pipeline-policy.js';
// Scheduling
export {
  AggregationSchema,
  ConcurrencySchema,
  PipelinePolicyFields,
  PipelinePolicySchema,
  QueueLimitsSchema,
  RetrySchema,
  toPipelinePolicy,
} from './pipeline-policy.js';
// Ports
export type { AuditLog, AuditPage, AuditQuery, AuditRecord } from './ports/audit-log.js';
export type { ChannelAdapter, ChannelContext, ChannelHealth } from './ports/channel-adapter.js';
export type { DedupStore } from './ports/dedup-store.js';
export type { HistoryEntry, HistoryStore } from './ports/history-store.js';
export type { Journal } from './ports/journal.js';
export type { Logger } from './ports/logger.js';
export { silentLogger } from './ports/logger.js';
export type { MessageStatus, MessageStatusStore } from './ports/message-status-store.js';
export type { Pipeline, PipelineResult, PipelineRunContext } from './ports/pipeline.js';
export type { EnqueueResult, PoolStats, QueryPool, QueuedMessage, Turn } from './ports/query-pool.js';
export type { RouteDecision, Router, RoutingConfig, RoutingConfigInput } from './router.js';
export { createRouter, DISCARD, RoutingSchema } from './router.js';
export type { SessionKey, SessionScope } from './session-key.js';
export { sessionKeyOf } from './session-key.js';
export { formatIssues, formatPath, parseOrThrow } from './validation.js';
