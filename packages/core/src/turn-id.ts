import { createHash } from 'node:crypto';

/**
 * The id of a turn running these messages (ids in arrival order): the same messages make the
 * same id on every attempt and after a restart, so a backend can deduplicate a re-run on it
 * (DESIGN §2 "Durability"); a turn that merges one more message is another request and gets
 * another id. One message — the common case — makes its id without hashing.
 */
export function turnIdOf(messageIds: readonly string[]): string {
  if (messageIds.length === 1) return `t-${messageIds[0]}`;
  return `t-${createHash('sha256').update(messageIds.join('\n')).digest('base64url').slice(0, 26)}`;
}
