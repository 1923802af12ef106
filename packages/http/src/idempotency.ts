import { createHash } from 'node:crypto';

/**
 * How long an `Idempotency-Key` stays bound to its message. The app keeps statuses at least this
 * long: a key whose status was pruned would accept its message again.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/**
 * The fingerprint an `Idempotency-Key` is bound with: SHA-256 (hex) of the request's defining
 * values, in a fixed order (JSON of the array, so that no value can pass for two). A key sent
 * again with another fingerprint is refused (`SB_IDEMPOTENCY_KEY_REUSED`), as the IETF
 * Idempotency-Key draft has it.
 */
export function idempotencyFingerprint(values: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(values)).digest('hex');
}
