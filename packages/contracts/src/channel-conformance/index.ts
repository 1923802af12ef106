import { describe } from 'vitest';
import { acknowledgementChecks } from './acknowledgement-checks.js';
import { useConformanceWorld } from './fixture.js';
import type { ChannelHarnessFactory } from './harness.js';
import { inboundChecks } from './inbound-checks.js';
import { outboundChecks } from './outbound-checks.js';
import { secretChecks } from './secret-checks.js';
import { singleOwnerChecks } from './single-owner-checks.js';
import { eventChecks } from './event-checks.js';
import { typingChecks } from './typing-checks.js';

export { conformanceIngress, REFUSAL_RETRY_AFTER_MS } from './conformance-ingress.js';
export type { ConformanceIngress, IngressMode } from './conformance-ingress.js';
export { capturingLogger } from './capturing-logger.js';
export { conformanceOutbound } from './conformance-outbound.js';
export type { ConformanceTimings } from './conformance-outbound.js';
export { deliveryAnswerOf } from './harness.js';
export type {
  AdapterSetup,
  ChannelCapabilities,
  ChannelHarness,
  ChannelHarnessFactory,
  DeliveryAnswer,
  DeliveryMode,
  EventSpec,
  OwnChannels,
  PlatformEvent,
  SendFailure,
  TypingFailure,
} from './harness.js';

/**
 * The channel conformance suite: every channel runs it against its fake platform server
 * through a harness of its own (`factory`). Checks a capability excludes are reported skipped.
 */
export function describeChannelConformance(name: string, factory: ChannelHarnessFactory): void {
  describe(`${name} channel conformance`, () => {
    describe('with one adapter running', () => {
      const world = useConformanceWorld(factory);
      inboundChecks(factory.capabilities, world);
      acknowledgementChecks(factory.capabilities, world);
      outboundChecks(factory.capabilities, world);
      typingChecks(factory.capabilities, world);
      eventChecks(factory.capabilities, world);
      secretChecks(factory.capabilities, world);
    });
    singleOwnerChecks(factory.capabilities, factory);
  });
}
