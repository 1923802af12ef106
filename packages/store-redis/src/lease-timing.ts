// Kept apart from the Redis code: the gateway reads the default timing for single-owner
// connections (`@switchboard/store-redis/lease-timing`) without loading the Redis client.

import type { LeaseTiming } from '@switchboard/core';

/**
 * The default lease timing of a replica's turns, also that of its single-owner connections, so
 * that a dead replica's turns and connections move on together.
 */
export const DEFAULT_LEASE_TIMING: LeaseTiming = {
  leaseMs: 15_000,
  renewEveryMs: 5_000,
  fenceAfterMs: 10_000,
};

/**
 * One `option: problem` line per broken rule of docs/design.md §5 "If a replica dies": fencing
 * (checked once per renewal round) must fire, and a call the replica made just before must have
 * timed out, before the lease expires and another replica may run the turn.
 */
export function leaseTimingProblems(timing: LeaseTiming, commandTimeoutMs: number): string[] {
  const { leaseMs, renewEveryMs, fenceAfterMs } = timing;
  const problems: string[] = [];
  for (const [option, value] of Object.entries(timing)) {
    if (!Number.isFinite(value) || value <= 0)
      problems.push(`${option}: must be a positive number of ms, got ${value}`);
  }
  if (!(renewEveryMs < fenceAfterMs)) {
    problems.push(
      `renewEveryMs: must be less than fenceAfterMs (${fenceAfterMs} ms), got ${renewEveryMs} ms`,
    );
  }
  if (!(fenceAfterMs + commandTimeoutMs < leaseMs)) {
    problems.push(
      `fenceAfterMs: with the ${commandTimeoutMs} ms command timeout must end before leaseMs (${leaseMs} ms), got ${fenceAfterMs} ms`,
    );
  }
  return problems;
}
