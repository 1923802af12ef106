import { createDecipheriv, createHash } from 'node:crypto';
import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';

/** A webhook body as Feishu means it: decrypted when it came encrypted, not yet checked further. */
export type FeishuBody = Record<string, unknown>;

const malformed = (message: string) => new SwitchboardError('SB_HTTP_BAD_REQUEST', { message });

/**
 * `encrypt` of an encrypted body: base64 of a 16-byte IV and the AES-256-CBC ciphertext of the
 * JSON, keyed by the SHA-256 of the encrypt key. `null` when it does not decrypt.
 */
export function decryptFeishu(encrypted: string, encryptKey: string): string | null {
  try {
    const bytes = Buffer.from(encrypted, 'base64');
    const key = createHash('sha256').update(encryptKey).digest();
    const decipher = createDecipheriv('aes-256-cbc', key, bytes.subarray(0, 16));
    return Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/**
 * Reads a webhook body: a JSON object, or `{ encrypt }` holding one (decrypted with
 * `encryptKey`). Throws SB_HTTP_BAD_REQUEST naming the problem. Pure.
 */
export function openFeishuBody(rawBody: string, encryptKey: string | undefined): FeishuBody {
  const outer = parseJsonObject(rawBody);
  if (!outer.ok) throw malformed(`body: ${outer.problem}`);
  const { encrypt } = outer.value;
  if (encrypt === undefined) return outer.value;
  if (typeof encrypt !== 'string') throw malformed('encrypt: expected a string');
  if (encryptKey === undefined) throw malformed('encrypt: the body is encrypted but no encrypt_key is set');
  // One problem for bad padding and bad JSON alike: telling them apart is a padding oracle.
  const plain = decryptFeishu(encrypt, encryptKey);
  const inner = plain === null ? null : parseJsonObject(plain);
  if (inner === null || !inner.ok)
    throw malformed('encrypt: does not decrypt to a JSON object with the encrypt key');
  return inner.value;
}

/** The verification token a body carries: at the top (URL check, v1 events) or in its v2 `header`. */
export function tokenOf(body: FeishuBody): string | undefined {
  const header = body.header as { token?: unknown } | undefined;
  const token = body.token ?? header?.token;
  return typeof token === 'string' ? token : undefined;
}
