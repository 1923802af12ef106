import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack rejects requests older than five minutes to stop replays; so do we. */
export const MAX_REQUEST_AGE_MS = 5 * 60_000;

/** Why a request failed verification; `null` from `verifySlackSignature` means it passed. */
export type SignatureProblem = 'missing headers' | 'stale timestamp' | 'bad signature';

export interface SignedRequest {
  /** `X-Slack-Signature`: `v0=<hex>`. */
  signature: string | undefined;
  /** `X-Slack-Request-Timestamp`: Unix seconds. */
  timestamp: string | undefined;
  /** The body exactly as received: the signature covers the bytes, not the parsed JSON. */
  rawBody: string;
}

/** `v0=` + hex HMAC-SHA256(signingSecret, `v0:<timestamp>:<rawBody>`), Slack's request signature. */
export function slackSignature(signingSecret: string, timestamp: string, rawBody: string): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
}

/**
 * Checks a request's signature against the signing secret in constant time and refuses
 * timestamps more than five minutes from `nowMs` (either way: a clock ahead is as suspect).
 */
export function verifySlackSignature(
  signingSecret: string,
  request: SignedRequest,
  nowMs: number,
): SignatureProblem | null {
  const { signature, timestamp, rawBody } = request;
  if (signature === undefined || timestamp === undefined) return 'missing headers';
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(nowMs - seconds * 1000) > MAX_REQUEST_AGE_MS)
    return 'stale timestamp';
  const expected = Buffer.from(slackSignature(signingSecret, timestamp, rawBody));
  const given = Buffer.from(signature);
  // timingSafeEqual needs equal lengths; a length mismatch reveals nothing about the secret.
  return given.length === expected.length && timingSafeEqual(given, expected) ? null : 'bad signature';
}
