import { createHash } from 'node:crypto';
import { CROCKFORD_BASE32 } from './ids.js';
import type { Outcome } from './outcome.js';
import { requestIdOf } from './turn-id.js';

/** Audit ids are as long as the message ids (ULIDs) beside them, in the same alphabet. */
const AUDIT_ID_LENGTH = 26;

/**
 * Names one end of one message: the delivery that ended it (`d:<delivery id>:<message id>:<kind>`),
 * or else the run of the message it ended (`m:<request id>:<kind>`, `requestIdOf`: a dead
 * letter's replay is another run). Writing the same end again — a settlement written again after its
 * commit failed, a turn run again after a crash, an outcome recovered from where its settlement
 * kept it — makes the same key; a replay's end makes another. Kept outcomes are stored under it
 * (docs/design.md §5 "Outcomes kept with their settlement"), and the Redis enqueue script
 * builds the overflow's (`m:<request id>:dropped`) the same way.
 */
export function outcomeKeyOf(outcome: Outcome): string {
  const { message, kind } = outcome;
  if (outcome.deliveryId !== undefined) return `d:${outcome.deliveryId}:${message.id}:${kind}`;
  return `m:${requestIdOf(outcome)}:${kind}`;
}

/**
 * The audit record id of `outcome`: 26 characters of Crockford base 32 from a SHA-256 of its
 * `outcomeKeyOf`, so that every write of the same end is the same record (`AuditLog.append` keeps
 * the first) and an end's record is never written twice (docs/design.md §2 "Durability").
 */
export function auditIdOf(outcome: Outcome): string {
  const digest = createHash('sha256').update(outcomeKeyOf(outcome)).digest();
  let id = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of digest) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5 && id.length < AUDIT_ID_LENGTH) {
      bits -= 5;
      id += CROCKFORD_BASE32[(buffer >> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
    if (id.length === AUDIT_ID_LENGTH) break;
  }
  return id;
}
