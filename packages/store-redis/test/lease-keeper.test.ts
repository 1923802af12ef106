import { SwitchboardError, type TurnLease } from '@switchboard/core';
import { eventually } from '@switchboard/testkit/eventually';
import { afterEach, describe, expect, it } from 'vitest';
import { LeaseKeeper, type Renewal } from '../src/lease-keeper.js';
import { recordingLogger } from './redis-harness.js';

const keepers: LeaseKeeper[] = [];
afterEach(() => {
  for (const keeper of keepers.splice(0)) keeper.stop();
});

describe('LeaseKeeper', () => {
  it('keeps its turns through one failed renewal: the round is tried again well before the next one', async () => {
    const calls: number[] = [];
    const started = performance.now();
    // Fencing comes before the second period ends, as at the 5 s / 10 s defaults give or take a
    // timer's jitter: one failed round must not wait a whole period.
    const keeper = new LeaseKeeper({
      async renew(): Promise<Renewal> {
        calls.push(performance.now() - started);
        if (calls.length === 2)
          throw new SwitchboardError('SB_STORE_UNAVAILABLE', {
            message: 'one stalled call',
            retryable: true,
          });
        return { lost: [], expiresAt: Date.now() + 10_000 };
      },
      onLost: (token) => lost.push(token),
      now: () => performance.now(),
      renewEveryMs: 200,
      fenceAfterMs: 350,
      logger: recordingLogger(),
    });
    keepers.push(keeper);
    const lost: string[] = [];
    keeper.hold({ token: 'turn-1', expiresAt: Date.now() + 10_000 } as TurnLease);
    await eventually(() => calls.length >= 4, 5000, 'four renewal rounds');
    expect(lost).toEqual([]);
    expect(keeper.holds('turn-1')).toBe(true);
    // The retry came within a quarter period of the failure, not at the next tick.
    expect((calls[2] as number) - (calls[1] as number)).toBeLessThan(150);
  });
});
