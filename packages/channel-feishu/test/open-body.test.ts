import { randomBytes } from 'node:crypto';
import { encryptFeishuBody } from '@switchboard/testkit/feishu';
import { describe, expect, it } from 'vitest';
import { openFeishuBody } from '../src/inbound/open-body.js';

const KEY = 'an-encrypt-key';

describe('openFeishuBody', () => {
  it('decrypts an encrypted body to its JSON object', () => {
    const body = encryptFeishuBody(KEY, JSON.stringify({ type: 'url_verification', challenge: 'c' }));
    expect(openFeishuBody(body, KEY)).toEqual({ type: 'url_verification', challenge: 'c' });
  });

  it('names bad padding and bad JSON inside alike', () => {
    const problemOf = (rawBody: string) => {
      try {
        openFeishuBody(rawBody, KEY);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('opened');
    };
    const badJson = problemOf(encryptFeishuBody(KEY, 'not json'));
    const otherKey = problemOf(encryptFeishuBody('another-key', '{"a":1}'));
    const random = problemOf(JSON.stringify({ encrypt: randomBytes(48).toString('base64') }));
    expect(badJson).toBe('encrypt: does not decrypt to a JSON object with the encrypt key');
    expect(otherKey).toBe(badJson);
    expect(random).toBe(badJson);
  });
});
