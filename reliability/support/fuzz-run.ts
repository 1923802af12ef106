import fc from 'fast-check';
import { profile } from './figures.js';

/**
 * How the generated-input scenarios drive fast-check: one fixed seed for the whole file, printed
 * so that a failure can be replayed (`RELIABILITY_SEED=<seed>`), and a number of runs per
 * property scaled by the profile (`full` tries fifteen times as many inputs as `short`).
 */
export const seed = Number(process.env.RELIABILITY_SEED ?? 20_261_201);

/** How many more inputs the `full` profile tries than `short`. */
const FULL_SCALE = 15;

/** The runs of one property: `shortRuns` in the short profile. */
function runs(shortRuns: number): number {
  return profile === 'full' ? shortRuns * FULL_SCALE : shortRuns;
}

/**
 * Checks `property` with the file's seed, `shortRuns` times in the short profile and, unless
 * `sameInFull` (inputs that each start a process), fifteen times as often in the full one. On
 * failure fast-check reports the shrunk counterexample and the check's own message (the request
 * and the answer).
 */
export async function check<T>(
  property: fc.IAsyncPropertyWithHooks<T>,
  shortRuns: number,
  options: { sameInFull?: boolean } = {},
): Promise<void> {
  await fc.assert(property, { seed, numRuns: options.sameInFull ? shortRuns : runs(shortRuns) });
}
