import { randomBytes } from 'node:crypto';
import * as lark from '@larksuiteoapi/node-sdk';
import { encryptFeishuBody } from '@switchboard/testkit/feishu';
import { describe, expect, it } from 'vitest';
import { decryptFeishu, openFeishuBody } from '../src/inbound/open-body.js';
import { feishuSignature, verifyFeishuCall } from '../src/inbound/verify.js';

// The fake Feishu encrypts and signs with the channel's own formulas, so a wrong formula would
// pass against it: these check them against the official SDK and a published example instead.

/** Feishu's documented decryption example: this `encrypt` with the key "test key" is "hello world". */
const DOCUMENTED = {
  key: 'test key',
  encrypt: 'P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=',
  plain: 'hello world',
};

/** Whether the SDK's event dispatcher takes `rawBody` with these headers as signed with `encryptKey`. */
function sdkAccepts(encryptKey: string, rawBody: string, headers: Record<string, string>): boolean {
  const dispatcher = new lark.EventDispatcher({ encryptKey, loggerLevel: lark.LoggerLevel.error });
  // As the SDK's own adapters hand it a request: the parsed body, its headers on the prototype.
  const data = Object.assign(Object.create({ headers }), JSON.parse(rawBody));
  return dispatcher.requestHandle?.checkIsEventValidated(data) === true;
}

describe("the channel's decryption and signature, against the Lark SDK", () => {
  it('decrypts the documented example as the SDK does', () => {
    expect(new lark.AESCipher(DOCUMENTED.key).decrypt(DOCUMENTED.encrypt)).toBe(DOCUMENTED.plain);
    expect(decryptFeishu(DOCUMENTED.encrypt, DOCUMENTED.key)).toBe(DOCUMENTED.plain);
  });

  it('opens encrypted bodies of any length and script to what the SDK decrypts', () => {
    for (const length of [0, 1, 15, 16, 17, 100, 1_000]) {
      const key = randomBytes(12).toString('base64');
      const plain = JSON.stringify({ text: `飞书 ${'x'.repeat(length)}`, n: length });
      const { encrypt } = JSON.parse(encryptFeishuBody(key, plain)) as { encrypt: string };
      const bySdk = JSON.parse(new lark.AESCipher(key).decrypt(encrypt));
      expect(openFeishuBody(JSON.stringify({ encrypt }), key)).toEqual(bySdk);
      expect(bySdk).toEqual(JSON.parse(plain));
    }
  });

  it('signs as a known answer: sha256 of timestamp, nonce, encrypt key and body', () => {
    const body = JSON.stringify({ encrypt: DOCUMENTED.encrypt });
    expect(feishuSignature('1700000000', 'nonce-1', DOCUMENTED.key, body)).toBe(
      '002a272a435d056759149cce18e88064ff320d38d91a09432445c344c4296949',
    );
  });

  it('accepts what the SDK accepts as signed, and both refuse another key', () => {
    const key = 'an-encrypt-key';
    const rawBody = encryptFeishuBody(key, JSON.stringify({ schema: '2.0', header: { event_id: 'e1' } }));
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = {
      'x-lark-request-timestamp': timestamp,
      'x-lark-request-nonce': 'nonce-2',
      'x-lark-signature': feishuSignature(timestamp, 'nonce-2', key, rawBody),
    };
    expect(sdkAccepts(key, rawBody, headers)).toBe(true);
    expect(
      verifyFeishuCall({ headers, rawBody }, { channelId: 'fs', encryptKey: key }, Date.now()),
    ).toBeNull();

    const forged = {
      ...headers,
      'x-lark-signature': feishuSignature(timestamp, 'nonce-2', 'another-key', rawBody),
    };
    expect(sdkAccepts(key, rawBody, forged)).toBe(false);
    expect(
      verifyFeishuCall({ headers: forged, rawBody }, { channelId: 'fs', encryptKey: key }, Date.now()),
    ).toBe('x-lark-signature: missing or not made with channels[fs].encrypt_key');
  });
});
