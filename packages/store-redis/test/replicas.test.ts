import { type Outcome, type Pipeline, PipelinePolicySchema, createController } from '@switchboard/core';
import { type InstantDelivery, instantDelivery } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import type { RedisQueryPool } from '../src/index.js';
import { queued, recordingLogger, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

const policies = new Map([['p', PipelinePolicySchema.parse({ id: 'p' })]]);

/**
 * A controller on `pool` running `pipeline`; records every outcome, and what it delivered in
 * `sending.delivered` — an outbox several replicas may share, as they would share the store.
 */
function replica(
  pool: RedisQueryPool,
  pipeline: Pipeline['run'],
  logger = recordingLogger(),
  shared?: InstantDelivery,
) {
  const outcomes: Outcome[] = [];
  const record = { record: (outcome: Outcome) => outcomes.push(outcome) };
  const sending = shared ?? instantDelivery(record);
  const controller = createController({
    pool,
    pipelines: new Map([['p', { id: 'p', run: pipeline }]]),
    policies,
    outcomes: record,
    outbox: sending.outbox,
    logger,
    // The dying replica's pipeline ignores its abort: do not wait long for it at the end.
    abortGraceMs: 50,
  });
  controller.start();
  return { controller, delivered: sending.delivered, outcomes };
}

describe.skipIf(!reachable)('replicas sharing one pool, each with its controller', () => {
  const pools = usePools();

  describe('when both run a backlog', () => {
    it('runs every message once, each session in order, never past the global limit', async () => {
      const setup = { concurrency: { global: 3, perSession: 1 }, pipelines: [{ id: 'p' }] };
      const pools2 = [await pools.open(setup), await pools.open(setup)];
      let running = 0;
      let mostRunning = 0;
      const work: Pipeline['run'] = async (query) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        // Work that takes a while, so that turns of both replicas overlap.
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
        return { replies: [{ text: query.text }] };
      };
      // The outcomes of both replicas' deliveries: the shared outbox's sender records them.
      const outcomes: Outcome[] = [];
      const shared = instantDelivery({ record: (outcome) => outcomes.push(outcome) });
      const deliveredInOrder = shared.delivered;
      const replicas = pools2.map((pool) => replica(pool, work, recordingLogger(), shared));
      try {
        const sent = Array.from({ length: 30 }, (_, index) => queued(`S${index % 6}`, Date.now()));
        for (const [index, message] of sent.entries()) {
          await (pools2[index % 2] as RedisQueryPool).enqueue(message);
        }
        await eventually(() => deliveredInOrder.length === 30, 10_000, 'all 30 delivered');

        const ids = deliveredInOrder.map((delivery) => delivery.origin.id);
        expect(new Set(ids).size).toBe(30);
        expect(outcomes.filter((outcome) => outcome.kind === 'completed')).toHaveLength(30);
        for (let session = 0; session < 6; session++) {
          const expected = sent
            .filter((message) => message.session === `S${session}`)
            .map((m) => m.message.id);
          const order = deliveredInOrder
            .filter((delivery) => delivery.chat === `S${session}`)
            .map((delivery) => delivery.origin.id);
          expect(order).toEqual(expected);
        }
        expect(mostRunning).toBeLessThanOrEqual(3);
        expect(await pools2[0]?.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
      } finally {
        await Promise.all(replicas.map((one) => one.controller.stop({ drainTimeoutMs: 0 })));
      }
    });
  });

  describe('when a replica dies in the middle of a turn', () => {
    it('loses nothing: another replica runs the turn once the lease expires', async () => {
      const leases = { leaseMs: 2400, renewEveryMs: 100, fenceAfterMs: 300 };
      const dying = await pools.open({ ...leases, pipelines: [{ id: 'p' }] });
      let hungStarted = false;
      const hung = replica(dying, () => {
        hungStarted = true;
        return new Promise(() => {});
      });
      const survivorLog = recordingLogger();
      const survivorPool = await pools.open({ ...leases, pipelines: [{ id: 'p' }], logger: survivorLog });
      const survivor = replica(
        survivorPool,
        async (query) => ({ replies: [{ text: query.text }] }),
        survivorLog,
      );
      try {
        const message = queued('A', Date.now());
        await dying.enqueue(message);
        await eventually(() => hungStarted, 5000, 'the turn running on the dying replica');
        expect(survivor.delivered).toEqual([]);
        // The process dies: its renewals stop and it settles nothing (its controller is told the
        // lease is lost and aborts the turn, as a dead process would not run it either).
        await pools.shutdown(dying);

        await eventually(() => survivor.delivered.length === 1, 10_000, 'the turn run by the survivor');
        expect(survivor.delivered[0]?.origin.id).toBe(message.message.id);
        expect(survivor.delivered[0]?.messages[0]?.attempt).toBe(2);
        expect(survivorLog.lines.some((line) => line.message.startsWith('lease expired'))).toBe(true);
        expect(hung.delivered).toEqual([]);
      } finally {
        await Promise.all([
          hung.controller.stop({ drainTimeoutMs: 0 }),
          survivor.controller.stop({ drainTimeoutMs: 0 }),
        ]);
      }
    });
  });
});
