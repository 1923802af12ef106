import { createHash } from 'node:crypto';
import {
  type SignedCall,
  checkTimestampWindow,
  constantTimeEqual,
  parseJsonObject,
} from '@switchboard/channel-kit';
import { isSwitchboardError } from '@switchboard/core';
import { type FeishuBody, openFeishuBody, tokenOf } from './open-body.js';

/** What a channel checks calls with. */
export interface FeishuKeys {
  /** The configured channel id, named in refusals. */
  channelId: string;
  encryptKey?: string;
  verificationToken?: string;
}

/** `X-Lark-Signature`: the hex SHA-256 of timestamp, nonce, encrypt key and raw body, concatenated. */
export function feishuSignature(
  timestamp: string,
  nonce: string,
  encryptKey: string,
  rawBody: string,
): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey + rawBody)
    .digest('hex');
}

/** How far a signed call's timestamp may be from now, either way: older is a replay. */
const MAX_REQUEST_AGE_MS = 5 * 60_000;

const headerOf = (call: SignedCall, name: string) => {
  const value = call.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** Whether `rawBody` is `{ encrypt }` and nothing else: how the console's URL check comes encrypted. */
function isEncryptedOnly(rawBody: string): boolean {
  const outer = parseJsonObject(rawBody);
  return outer.ok && Object.keys(outer.value).length === 1 && typeof outer.value.encrypt === 'string';
}

/**
 * The one refusal of a call that is not signed with the encrypt key, whatever its body: a refusal
 * saying why an unsigned body failed (bad padding, bad JSON, not a URL check) would be a padding
 * oracle, decrypting captured events one guessed byte at a time.
 */
export const unsignedRefusal = (channelId: string) =>
  `x-lark-signature: missing or not made with channels[${channelId}].encrypt_key`;

/** The console's URL check, unsigned: `{ encrypt }` alone, decrypting to a `url_verification`. */
function isUnsignedUrlCheck(rawBody: string, encryptKey: string): boolean {
  if (!isEncryptedOnly(rawBody)) return false;
  try {
    return openFeishuBody(rawBody, encryptKey).type === 'url_verification';
  } catch (err) {
    if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST')) throw err;
    return false;
  }
}

/**
 * Why a webhook call is refused (401), or `null`. With an encrypt key Feishu signs every event:
 * the signature must match before anything is decrypted, and its timestamp be within five minutes
 * of `nowMs` (a replayed call is refused). It does not sign the console's URL check, which passes
 * unsigned only as a body of `encrypt` alone that decrypts with the key to a `url_verification`
 * (carrying the verification token, when one is set): a plain body would pass on knowing the URL
 * alone. Every refusal of an unsigned or wrongly signed call is the same text (`unsignedRefusal`).
 * Without an encrypt key nothing is signed and the body's verification token is the only check.
 */
export function verifyFeishuCall(call: SignedCall, keys: FeishuKeys, nowMs: number): string | null {
  const { channelId, encryptKey, verificationToken } = keys;
  const signature = headerOf(call, 'x-lark-signature');
  if (encryptKey !== undefined && signature !== undefined) {
    const timestamp = headerOf(call, 'x-lark-request-timestamp') ?? '';
    const stale = checkTimestampWindow(timestamp, nowMs, MAX_REQUEST_AGE_MS);
    if (stale !== null) return `x-lark-request-timestamp: ${timestamp === '' ? 'missing' : stale}`;
    const nonce = headerOf(call, 'x-lark-request-nonce') ?? '';
    const expected = feishuSignature(timestamp, nonce, encryptKey, call.rawBody);
    return constantTimeEqual(expected, signature) ? null : unsignedRefusal(channelId);
  }
  if (encryptKey !== undefined) {
    if (!isUnsignedUrlCheck(call.rawBody, encryptKey)) return unsignedRefusal(channelId);
    if (verificationToken === undefined) return null;
    const body = openFeishuBody(call.rawBody, encryptKey);
    return constantTimeEqual(tokenOf(body) ?? '', verificationToken) ? null : unsignedRefusal(channelId);
  }
  let body: FeishuBody;
  try {
    body = openFeishuBody(call.rawBody, encryptKey);
  } catch (err) {
    if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST')) throw err;
    return `unsigned body cannot be checked (${err.message})`;
  }
  if (verificationToken !== undefined && !constantTimeEqual(tokenOf(body) ?? '', verificationToken)) {
    return `token: missing or not channels[${channelId}].verification_token`;
  }
  return null;
}
