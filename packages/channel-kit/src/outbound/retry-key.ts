import { createHash } from 'node:crypto';

/**
 * The idempotency key of one platform call of a send (LINE's `X-Line-Retry-Key`, Feishu's
 * `uuid`): a UUID (version 8, name-based) hashed from what the call is — the turn (or message) it
 * answers, its place in the send and its texts — so that every try of the same call carries the
 * same key and the platform takes it once. The texts count too: a dead-letter notice for a
 * message must not share the key of its answer.
 */
export function retryKeyOf(answering: string, index: number, texts: readonly string[]): string {
  const hex = createHash('sha256')
    .update(JSON.stringify([answering, index, texts]))
    .digest('hex');
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
