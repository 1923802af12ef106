import {
  type Outcome,
  PipelinePolicySchema,
  type Reply,
  type Turn,
  createController,
} from '@switchboard/core';
import { instantDelivery } from '@switchboard/contracts';
import { eventually } from '@switchboard/testkit/eventually';
import { describe, expect, it } from 'vitest';
import { manualClock, queued, recordingLogger, redisReachable, usePools } from './redis-harness.js';

const reachable = await redisReachable();

describe.skipIf(!reachable)('a turn taken over while its first holder still runs it', () => {
  const pools = usePools();

  // The late answer reaches the outbox before its completion answers `lost` (replies are stored
  // before the turn completes, so that no answer is ever lost): it is sent, as it was sent before
  // the outbox. Only the pool write is the new holder's alone. Known gap (docs/design.md §5): that
  // late delivery records an outcome of its own beside the new holder's.
  it('is settled in the pool by the new holder alone: the first one logs lease lost', async () => {
    const clock = manualClock();
    // Renewals far apart on the real clock: the takeover below happens before any of them.
    const leases = { now: clock.now, leaseMs: 100_000, renewEveryMs: 60_000, fenceAfterMs: 90_000 };
    const slowPool = await pools.open({ ...leases, pipelines: [{ id: 'p' }] });
    const newPool = await pools.open({ ...leases, pipelines: [{ id: 'p' }] });

    let answerSlowTurn: ((result: { replies: Reply[] }) => void) | undefined;
    const outcomes: Outcome[] = [];
    const logger = recordingLogger();
    const sending = instantDelivery({ record: (outcome) => outcomes.push(outcome) });
    const controller = createController({
      pool: slowPool,
      pipelines: new Map([
        [
          'p',
          { id: 'p', run: () => new Promise<{ replies: Reply[] }>((resolve) => (answerSlowTurn = resolve)) },
        ],
      ]),
      policies: new Map([['p', PipelinePolicySchema.parse({ id: 'p' })]]),
      outcomes: { record: (outcome) => outcomes.push(outcome) },
      outbox: sending.outbox,
      logger,
    });
    controller.start();
    try {
      await slowPool.enqueue(queued('A', clock.now()));
      await eventually(() => answerSlowTurn !== undefined, 5000, 'the slow replica runs the turn');

      clock.advance(100_001);
      const taken = (await newPool.claim()) as Turn;
      expect(taken.attempt).toBe(2);
      expect(await newPool.complete(taken)).toBe('settled');

      answerSlowTurn?.({ replies: [{ text: 'late' }] });
      await eventually(
        () => logger.lines.some((line) => line.level === 'warn' && line.message.startsWith('lease lost')),
        5000,
        'a WARN lease lost on the slow replica',
      );
      await eventually(() => sending.delivered.length === 1, 5000, 'the late answer is delivered');
      expect(sending.delivered[0]?.replies).toEqual([{ text: 'late' }]);
      expect(await newPool.stats()).toMatchObject({ pending: 0, inflight: 0, sessions: 0 });
    } finally {
      await controller.stop({ drainTimeoutMs: 0 });
    }
  });
});
