import { signWhatsAppBody } from '@switchboard/testkit/whatsapp';
import { describe, expect, it } from 'vitest';
import { answerSubscription, verifyWhatsAppSignature } from '../../src/inbound/verify.js';

const SECRET = 'app-secret-for-tests';
const BODY = '{"object":"whatsapp_business_account","entry":[]}';

describe('verifyWhatsAppSignature', () => {
  it('accepts sha256= and the hex HMAC of the raw body under the app secret', () => {
    expect(verifyWhatsAppSignature(SECRET, BODY, signWhatsAppBody(SECRET, BODY))).toBe(true);
  });

  it.each([
    ['missing', undefined],
    ['without the sha256= prefix', signWhatsAppBody(SECRET, BODY).slice('sha256='.length)],
    ['made with another secret', signWhatsAppBody('other', BODY)],
    ['made over another body', signWhatsAppBody(SECRET, `${BODY} `)],
  ])('refuses a signature %s', (_case, signature) => {
    expect(verifyWhatsAppSignature(SECRET, BODY, signature)).toBe(false);
  });
});

describe('answerSubscription', () => {
  const query = {
    'hub.mode': 'subscribe',
    'hub.verify_token': 'chosen-token',
    'hub.challenge': '1158201444',
  };

  it('answers the challenge when the mode is subscribe and the token matches', () => {
    expect(answerSubscription(query, 'chosen-token')).toEqual({ challenge: '1158201444' });
  });

  it.each([
    ['hub.mode', { ...query, 'hub.mode': 'unsubscribe' }],
    ['hub.verify_token', { ...query, 'hub.verify_token': 'chosen-tokeN' }],
    ['hub.verify_token', { ...query, 'hub.verify_token': ['chosen-token', 'x'] }],
    ['hub.challenge', { ...query, 'hub.challenge': '' }],
    ['hub.challenge', { ...query, 'hub.challenge': 'x'.repeat(257) }],
  ])('names %s when it is wrong', (parameter, wrong) => {
    expect(answerSubscription(wrong, 'chosen-token')).toEqual({
      problem: expect.stringContaining(parameter),
    });
  });
});
