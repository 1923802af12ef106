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

/** Meta sends a number; anything else (a page, a script) is no challenge of Meta's, and is not echoed. */
const CHALLENGE = /^\d{1,256}$/;

/** A query parameter given more than once (Fastify parses it into an array). */
const REPEATED = Symbol('repeated');

function single(value: unknown): unknown {
  return Array.isArray(value) ? REPEATED : value;
}

/**
 * The answer to Meta's verification of the callback URL: `{ challenge }` to echo when
 * `hub.mode` is `subscribe`, `hub.verify_token` is the configured one (constant time) and
 * `hub.challenge` is 1 to 256 digits, else `{ problem }` naming the parameter that was wrong, or
 * repeated. Pure.
 */
export function answerSubscription(
  query: SubscriptionQuery,
  verifyToken: string,
): { challenge: string } | { problem: string } {
  const mode = single(query['hub.mode']);
  const token = single(query['hub.verify_token']);
  const challenge = single(query['hub.challenge']);
  for (const [parameter, value] of [
    ['hub.mode', mode],
    ['hub.verify_token', token],
    ['hub.challenge', challenge],
  ] as const) {
    if (value === REPEATED) return { problem: `${parameter}: repeated; expected it once` };
  }
  if (mode !== 'subscribe') return { problem: 'hub.mode: expected subscribe' };
  if (typeof token !== 'string' || !constantTimeEqual(token, verifyToken)) {
    return { problem: 'hub.verify_token: does not match' };
  }
  if (typeof challenge !== 'string' || !CHALLENGE.test(challenge)) {
    return { problem: 'hub.challenge: expected 1 to 256 digits' };
  }
  return { challenge };
}
