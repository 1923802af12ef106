/**
 * How a settlement (`complete`, `retry`, `abandon`) ended: `settled` when the claim still held
 * and the pool applied it; `lost` when the claim had been taken over or settled already — the
 * pool changed nothing, and the caller must record no outcome (whoever holds the messages now
 * will).
 */
export type Settlement = 'settled' | 'lost';
