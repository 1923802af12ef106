import { constantTimeEqual } from '@switchboard/channel-kit';

/** The header Telegram sets on webhook calls when `setWebhook` had a `secret_token`. */
export const SECRET_TOKEN_HEADER = 'x-telegram-bot-api-secret-token';

/**
 * A check of the `X-Telegram-Bot-Api-Secret-Token` header against the configured secret, in
 * constant time: neither the secret nor its length leaks through timing. A missing or repeated
 * header fails.
 */
export function secretTokenVerifier(
  secretToken: string,
): (presented: string | string[] | undefined) => boolean {
  return (presented) => typeof presented === 'string' && constantTimeEqual(secretToken, presented);
}
