import { constantTimeEqual, verifyHmacSha256 } from '@switchboard/channel-kit';

/** Meta's scheme prefix of `X-Hub-Signature-256`. */
const SCHEME = 'sha256=';

/**
 * Whether `signature` (the `X-Hub-Signature-256` header) is `sha256=` and the hex HMAC-SHA256 of
 * the raw body under the app secret, compared in constant time.
 */
export function verifyWhatsAppSignature(
  appSecret: string,
  rawBody: string,
  signature: string | undefined,
): boolean {
  const presented = signature?.startsWith(SCHEME) ? signature.slice(SCHEME.length) : undefined;
  return verifyHmacSha256(appSecret, rawBody, presented, 'hex');
}

/** The query of Meta's `GET` verification request. */
export interface SubscriptionQuery {
  'hub.mode'?: unknown;
  'hub.verify_token'?: unknown;
  'hub.challenge'?: unknown;
}

/** Meta sends a number; anything much longer is no challenge of Meta's. */
const MAX_CHALLENGE_CHARS = 256;

/**
 * The answer to Meta's verification of the callback URL: `{ challenge }` to echo when
 * `hub.mode` is `subscribe` and `hub.verify_token` is the configured one (constant time), else
 * `{ problem }` naming the parameter that was wrong. Pure.
 */
export function answerSubscription(
  query: SubscriptionQuery,
  verifyToken: string,
): { challenge: string } | { problem: string } {
  const challenge = query['hub.challenge'];
  const token = query['hub.verify_token'];
  if (query['hub.mode'] !== 'subscribe') return { problem: 'hub.mode: expected subscribe' };
  if (typeof token !== 'string' || !constantTimeEqual(token, verifyToken)) {
    return { problem: 'hub.verify_token: does not match' };
  }
  if (typeof challenge !== 'string' || challenge === '' || challenge.length > MAX_CHALLENGE_CHARS) {
    return { problem: `hub.challenge: expected 1 to ${MAX_CHALLENGE_CHARS} characters` };
  }
  return { challenge };
}
