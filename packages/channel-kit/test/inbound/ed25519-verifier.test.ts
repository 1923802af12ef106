import { generateKeyPairSync, sign } from 'node:crypto';
import { isSwitchboardError } from '@switchboard/core';
import { describe, expect, it } from 'vitest';
import { ed25519Verifier } from '../../src/inbound/ed25519-verifier.js';

/** A fresh key pair: the public key as Discord shows it (hex), and a signer. */
function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  const publicKeyHex = Buffer.from(jwk.x as string, 'base64url').toString('hex');
  const signHex = (message: string) => sign(null, Buffer.from(message), privateKey).toString('hex');
  return { publicKeyHex, signHex };
}

describe('ed25519Verifier', () => {
  const { publicKeyHex, signHex } = keyPair();
  const verify = ed25519Verifier(publicKeyHex);
  const message = '1718000000{"type":1}';

  describe('when the signature was made with the private key over the message', () => {
    it('verifies it, from a string or from bytes', () => {
      expect(verify(message, signHex(message))).toBe(true);
      expect(verify(Buffer.from(message), signHex(message))).toBe(true);
      expect(ed25519Verifier(publicKeyHex.toUpperCase())(message, signHex(message))).toBe(true);
    });
  });

  describe('when the message, key or signature differ, or the signature is malformed', () => {
    it('does not verify', () => {
      const signature = signHex(message);
      expect(verify(`${message} `, signature)).toBe(false);
      expect(ed25519Verifier(keyPair().publicKeyHex)(message, signature)).toBe(false);
      expect(verify(message, keyPair().signHex(message))).toBe(false);
      expect(verify(message, signature.slice(2))).toBe(false);
      expect(verify(message, `zz${signature.slice(2)}`)).toBe(false);
      expect(verify(message, undefined)).toBe(false);
    });
  });

  describe('when the public key is not 32 bytes of hex', () => {
    it('throws SB_CONFIG_INVALID at once', () => {
      for (const key of [
        '',
        'abc',
        publicKeyHex.slice(2),
        `${publicKeyHex}00`,
        `g${publicKeyHex.slice(1)}`,
      ]) {
        let thrown: unknown;
        try {
          ed25519Verifier(key);
        } catch (err) {
          thrown = err;
        }
        expect(isSwitchboardError(thrown, 'SB_CONFIG_INVALID')).toBe(true);
      }
    });
  });
});
