import { type ChannelAdapter, createMemoryChannelLeases, silentLogger } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conformanceIngress } from './conformance-ingress.js';
import { uniqueText } from './fixture.js';
import type { ChannelCapabilities, ChannelHarness, ChannelHarnessFactory, OwnChannels } from './harness.js';

/** Short, so that a takeover happens within the check; renewals keep the holder's lease meanwhile. */
const TIMING = { leaseMs: 2_000, renewEveryMs: 200, fenceAfterMs: 1_000 };
/** A standby asks for a released lease once a second (channel-kit's `STANDBY_RETRY_MS`). */
const TAKEOVER_WITHIN_MS = 3_000;

/** One replica of the gateway: the adapter behind its lease, as `ownChannels` wraps it, with its own ingress. */
function replica(
  ownChannels: OwnChannels,
  adapter: ChannelAdapter,
  leases: ReturnType<typeof createMemoryChannelLeases>,
  replicaId: string,
) {
  const owned = ownChannels(new Map([[adapter.id, adapter]]), {
    leases,
    replicaId,
    logger: silentLogger,
    timing: TIMING,
  });
  const channel = owned.adapters.get(adapter.id);
  const role = owned.owned.get(adapter.id);
  if (channel === undefined || role === undefined) {
    throw new Error(`ownChannels did not put the single-consumer adapter "${adapter.id}" behind a lease`);
  }
  const ingress = conformanceIngress();
  return {
    channel,
    ingress,
    role: () => role.role(),
    start: () => channel.start({ ingress: ingress.ingress, logger: silentLogger }),
  };
}

/** Single-owner connections: one consumer per token across replicas, handed over on drain. */
export function singleOwnerChecks(capabilities: ChannelCapabilities, factory: ChannelHarnessFactory): void {
  describe.skipIf(capabilities.connection !== 'single-owner')(
    "when two replicas share a memory ChannelLeases behind channel-kit's ownChannels",
    () => {
      let harness: ChannelHarness;
      beforeAll(async () => {
        harness = await factory.start();
      });
      afterAll(() => harness.close());

      it('runs the connection on the lease holder only, one consumer at a time, and hands over when the holder drains', async () => {
        const { ownChannels } = factory;
        if (ownChannels === undefined) throw new Error('a single-owner factory passes ownChannels');
        const leases = createMemoryChannelLeases();
        const first = replica(
          ownChannels,
          harness.createAdapter({ logger: silentLogger }),
          leases,
          'replica-a',
        );
        const second = replica(
          ownChannels,
          harness.createAdapter({ logger: silentLogger }),
          leases,
          'replica-b',
        );
        try {
          await first.start();
          await second.start();
          expect([first.role(), second.role()]).toEqual(['active', 'standby']);
          await eventually(() => first.channel.health().ready, 5_000, "the holder's connection ready");

          const before = uniqueText('before handover');
          await harness.deliver(harness.event({ chat: 'direct', text: before }), 'signed');
          await eventually(() => first.ingress.queued.length === 1, 5_000, 'the holder queued the event');

          first.channel.drain?.();
          // Active from the acquisition; ready once its connection is up, when the platform can reach it.
          await eventually(
            () => second.role() === 'active' && second.channel.health().ready,
            TAKEOVER_WITHIN_MS,
            'the standby taking over, its connection ready',
          );
          const after = uniqueText('after handover');
          await harness.deliver(harness.event({ chat: 'direct', text: after }), 'signed');
          await eventually(
            () => second.ingress.queued.length === 1,
            5_000,
            'the new holder queued the event',
          );

          expect(first.ingress.accepted.map((message) => message.text)).toEqual([before]);
          expect(second.ingress.accepted.map((message) => message.text)).toEqual([after]);
          expect(harness.maxConsumers?.()).toBe(1);
        } finally {
          await Promise.all([first.channel.stop(), second.channel.stop()]);
        }
      });
    },
  );
}
