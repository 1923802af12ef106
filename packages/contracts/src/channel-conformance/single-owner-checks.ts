import {
  type ChannelAdapter,
  type ChannelLease,
  createMemoryChannelLeases,
  silentLogger,
} from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conformanceIngress } from './conformance-ingress.js';
import { uniqueText } from './fixture.js';
import type { ChannelCapabilities, ChannelHarness, ChannelHarnessFactory } from './harness.js';

const LEASE_MS = 10_000;

/**
 * One replica as the gateway runs a single-owner channel (docs/design.md §5): it starts the
 * connection only while it holds the channel's lease, and releases the lease after stopping.
 */
function replica(adapter: ChannelAdapter, name: string) {
  const ingress = conformanceIngress();
  let lease: ChannelLease | null = null;
  return {
    adapter,
    ingress,
    async tryStart(leases: ReturnType<typeof createMemoryChannelLeases>): Promise<boolean> {
      const got = await leases.acquire(adapter.id, name, LEASE_MS);
      if (got.holder !== name) return false;
      lease = got;
      await adapter.start({ ingress: ingress.ingress, logger: silentLogger });
      return true;
    },
    async stopAndRelease(leases: ReturnType<typeof createMemoryChannelLeases>): Promise<void> {
      await adapter.stop();
      if (lease !== null) await leases.release(lease);
      lease = null;
    },
  };
}

/** Single-owner connections: one consumer per token across replicas, handed over on release. */
export function singleOwnerChecks(capabilities: ChannelCapabilities, factory: ChannelHarnessFactory): void {
  describe.skipIf(capabilities.connection !== 'single-owner')(
    'when two replicas share a memory ChannelLeases',
    () => {
      let harness: ChannelHarness;
      beforeAll(async () => {
        harness = await factory.start();
      });
      afterAll(() => harness.close());

      it('runs the connection on the lease holder only, one consumer at a time, and hands over on release', async () => {
        const leases = createMemoryChannelLeases();
        const first = replica(harness.createAdapter({ logger: silentLogger }), 'replica-a');
        const second = replica(harness.createAdapter({ logger: silentLogger }), 'replica-b');
        expect(first.adapter.singleConsumer).toBe(true);
        expect(await first.tryStart(leases)).toBe(true);
        expect(await second.tryStart(leases)).toBe(false);

        const before = uniqueText('before handover');
        await harness.deliver(harness.event({ chat: 'direct', text: before }), 'signed');
        await eventually(() => first.ingress.queued.length === 1, 5_000, 'the holder queued the event');

        await first.stopAndRelease(leases);
        expect(await second.tryStart(leases)).toBe(true);
        const after = uniqueText('after handover');
        await harness.deliver(harness.event({ chat: 'direct', text: after }), 'signed');
        await eventually(() => second.ingress.queued.length === 1, 5_000, 'the new holder queued the event');
        await second.stopAndRelease(leases);

        expect(first.ingress.accepted.map((message) => message.text)).toEqual([before]);
        expect(second.ingress.accepted.map((message) => message.text)).toEqual([after]);
        expect(harness.maxConsumers?.()).toBe(1);
      });
    },
  );
}
