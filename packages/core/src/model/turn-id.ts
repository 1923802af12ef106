import { createHash } from 'node:crypto';
import type { QueuedMessage } from './queued-message.js';

/**
 * What a turn id is made of for one message: its id, and for a replayed dead letter also the
 * replay (`QueuedMessage.replayOf`), so the replay is not the failed attempts' request.
 */
export function requestIdOf(queued: Pick<QueuedMessage, 'message' | 'replayOf'>): string {
  return queued.replayOf === undefined ? queued.message.id : `${queued.message.id}~${queued.replayOf}`;
}

/**
 * The id of a turn running these messages (their `requestIdOf`, in arrival order): the same
 * messages make the same id on every attempt and after a restart, so a backend can deduplicate a
 * re-run on it (docs/design.md §2 "Durability"); a turn that merges one more message, or a replay, is
 * another request and gets another id. One message — the common case — makes its id without
 * hashing.
 */
export function turnIdOf(requestIds: readonly string[]): string {
  if (requestIds.length === 1) return `t-${requestIds[0]}`;
  return `t-${createHash('sha256').update(requestIds.join('\n')).digest('base64url').slice(0, 26)}`;
}
