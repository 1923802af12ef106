import { type KeyObject, createPublicKey, verify } from 'node:crypto';
import { SwitchboardError } from '@switchboard/core';

/** A raw Ed25519 public key is 32 bytes, a signature 64 bytes, both written in hex. */
const PUBLIC_KEY_HEX = /^[0-9a-fA-F]{64}$/;
const SIGNATURE_HEX = /^[0-9a-fA-F]{128}$/;

function publicKeyOf(publicKeyHex: string): KeyObject {
  if (!PUBLIC_KEY_HEX.test(publicKeyHex)) {
    throw new SwitchboardError('SB_CONFIG_INVALID', {
      message: 'public key: expected an Ed25519 public key of 64 hex digits',
    });
  }
  const x = Buffer.from(publicKeyHex, 'hex').toString('base64url');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
}

/**
 * A verifier of Ed25519 signatures under one public key given in hex, as Discord signs its
 * interactions (`X-Signature-Ed25519` over `X-Signature-Timestamp` + raw body). The key is read
 * once, here: a malformed key throws SB_CONFIG_INVALID at start rather than on every call. A
 * signature that is not 128 hex digits, or `undefined`, does not verify.
 */
export function ed25519Verifier(
  publicKeyHex: string,
): (message: string | Uint8Array, signatureHex: string | undefined) => boolean {
  const key = publicKeyOf(publicKeyHex);
  return (message, signatureHex) => {
    if (signatureHex === undefined || !SIGNATURE_HEX.test(signatureHex)) return false;
    const data = typeof message === 'string' ? Buffer.from(message) : message;
    return verify(null, data, key, Buffer.from(signatureHex, 'hex'));
  };
}
