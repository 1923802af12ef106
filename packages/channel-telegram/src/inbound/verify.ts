import { createHash, timingSafeEqual } from 'node:crypto';

/** The header Telegram sets on webhook calls when `setWebhook` had a `secret_token`. */
export const SECRET_TOKEN_HEADER = 'x-telegram-bot-api-secret-token';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * A check of the `X-Telegram-Bot-Api-Secret-Token` header against the configured secret, in
 * constant time: both sides are hashed first, so neither the secret nor its length leaks through
 * timing (grammY's webhook adapters compare the same way). A missing or repeated header fails.
 */
export function secretTokenVerifier(
  secretToken: string,
): (presented: string | string[] | undefined) => boolean {
  const expected = digest(secretToken);
  return (presented) => typeof presented === 'string' && timingSafeEqual(expected, digest(presented));
}
