/**
 * How long an `Idempotency-Key` stays bound to its message. The app keeps statuses at least this
 * long: a key whose status was pruned would accept its message again.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
