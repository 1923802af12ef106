import { checkTimestampWindow, hmacSha256, verifyHmacSha256 } from '@switchboard/channel-kit';

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

/** Slack's signed basestring: version, timestamp and the raw body. */
function basestring(timestamp: string, rawBody: string): string {
  return `v0:${timestamp}:${rawBody}`;
}

/** `v0=` + hex HMAC-SHA256(signingSecret, `v0:<timestamp>:<rawBody>`), Slack's request signature. */
export function slackSignature(signingSecret: string, timestamp: string, rawBody: string): string {
  return `v0=${hmacSha256(signingSecret, basestring(timestamp, rawBody), 'hex')}`;
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
  if (checkTimestampWindow(timestamp, nowMs, MAX_REQUEST_AGE_MS) !== null) return 'stale timestamp';
  const presented = signature.startsWith('v0=') ? signature.slice('v0='.length) : undefined;
  return verifyHmacSha256(signingSecret, basestring(timestamp, rawBody), presented, 'hex')
    ? null
    : 'bad signature';
}
