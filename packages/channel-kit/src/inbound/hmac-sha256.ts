import { createHmac } from 'node:crypto';
import { constantTimeEqual } from './constant-time-equal.js';

/** How a platform writes a signature: Slack and GitHub use hex, LINE and Shopify base64. */
export type SignatureEncoding = 'hex' | 'base64';

/** HMAC-SHA256 of `data` under `secret`, as the platform writes it. */
export function hmacSha256(secret: string, data: string, encoding: SignatureEncoding): string {
  return createHmac('sha256', secret).update(data).digest(encoding);
}

/**
 * Whether `presented` is the HMAC-SHA256 of `data` under `secret`, compared in constant time. The
 * caller strips any scheme prefix (`v0=`, `sha256=`) first; a missing signature is `undefined`
 * and never matches.
 */
export function verifyHmacSha256(
  secret: string,
  data: string,
  presented: string | undefined,
  encoding: SignatureEncoding,
): boolean {
  if (presented === undefined) return false;
  return constantTimeEqual(hmacSha256(secret, data, encoding), presented);
}
