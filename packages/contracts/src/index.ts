// Contract test suites every implementation of a port runs (STYLE.md "Ports").
export { auditLogContract } from './audit-log-contract.js';
export { channelLeasesContract } from './channel-leases-contract.js';
export {
  REFUSAL_RETRY_AFTER_MS,
  capturingLogger,
  conformanceIngress,
  conformanceOutbound,
  deliveryAnswerOf,
  describeChannelConformance,
} from './channel-conformance/index.js';
export type {
  AdapterSetup,
  ChannelCapabilities,
  ChannelHarness,
  ChannelHarnessFactory,
  ConformanceIngress,
  ConformanceTimings,
  DeliveryAnswer,
  DeliveryMode,
  EventSpec,
  IngressMode,
  OwnChannels,
  PlatformEvent,
  SendFailure,
  TypingFailure,
} from './channel-conformance/index.js';
export { instantDelivery } from './instant-delivery.js';
export type { InstantDelivery } from './instant-delivery.js';
export { historyStoreContract } from './history-store-contract.js';
export { journalContract } from './journal-contract.js';
export { messageStatusStoreContract } from './message-status-store-contract.js';
export {
  auditRecordFixture,
  messageStatusFixture,
  queuedMessageFixture,
  useStoreUnderTest,
} from './store-harness.js';
export type { StoreFactory, StoreFactoryContext, StoreHarness, StoreUnderTest } from './store-harness.js';
export { deliveryFixture, replyOutboxContract } from './reply-outbox-contract.js';
export { queryPoolContract, type QueryPoolScope } from './query-pool-contract.js';
export type { QueryPoolFactory, QueryPoolFactoryContext } from './query-pool-factory.js';
export { recordingIngress } from './recording-ingress.js';
export type { RecordedDrop } from './recording-ingress.js';
export {
  SCHEDULING_POLICIES,
  expectSchedulingInvariants,
  schedulingCommand,
  simulateScheduling,
} from './scheduling-property.js';
export type { SchedulingCommand, SchedulingResult, SchedulingWorld } from './scheduling-property.js';
export { handoffStoreContract } from './handoff-store-contract.js';
export { rateBucketsContract } from './rate-buckets-contract.js';
export { replicaEventsContract } from './replica-events-contract.js';
