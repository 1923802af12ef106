/**
 * A seeded pseudo-random source, so that a failing reliability run can be repeated: every
 * scenario prints its seed, and `RELIABILITY_SEED=<n>` replays the same choices (fault kinds,
 * kill moments). Timing still varies between runs; the choices made at each point do not.
 */
export interface SeededRandom {
  readonly seed: number;
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  between(min: number, max: number): number;
}

/** The seed of this run: `RELIABILITY_SEED` when set, else a fresh one. */
export function runSeed(): number {
  const given = process.env.RELIABILITY_SEED;
  if (given !== undefined && given !== '') return Number.parseInt(given, 10) >>> 0;
  return (Date.now() ^ (process.pid << 16)) >>> 0;
}

/** mulberry32: small, fast and good enough to spread faults; not for secrets. */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { seed, next, between: (min, max) => min + Math.floor(next() * (max - min + 1)) };
}

/**
 * A seed derived from `seed` and `parts` (FNV-1a), so that a choice tied to a thing — the nth
 * visit of one message — is the same in every run with the same seed, whatever the timing.
 */
export function deriveSeed(seed: number, ...parts: Array<string | number>): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (const char of parts.join('\u0000')) {
    hash ^= char.charCodeAt(0);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
