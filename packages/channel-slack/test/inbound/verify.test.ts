import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_AGE_MS, slackSignature, verifySlackSignature } from '../../src/inbound/verify.js';

// The worked example of Slack's "Verifying requests from Slack" guide.
const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const TIMESTAMP = '1531420618';
const BODY =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
const SIGNATURE = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
const AT_MS = Number(TIMESTAMP) * 1000;

describe('slackSignature', () => {
  it("matches Slack's documented example", () => {
    expect(slackSignature(SECRET, TIMESTAMP, BODY)).toBe(SIGNATURE);
  });
});

describe('verifySlackSignature', () => {
  const request = { signature: SIGNATURE, timestamp: TIMESTAMP, rawBody: BODY };

  describe('when the signature matches and the timestamp is recent', () => {
    it('passes', () => {
      expect(verifySlackSignature(SECRET, request, AT_MS + 60_000)).toBeNull();
    });
  });

  describe('when the body, the secret or the signature differ', () => {
    it('reports a bad signature', () => {
      expect(verifySlackSignature(SECRET, { ...request, rawBody: `${BODY} ` }, AT_MS)).toBe('bad signature');
      expect(verifySlackSignature(`${SECRET}x`, request, AT_MS)).toBe('bad signature');
      expect(verifySlackSignature(SECRET, { ...request, signature: 'v0=abc' }, AT_MS)).toBe('bad signature');
    });
  });

  describe('when the timestamp is more than five minutes away', () => {
    it('reports a stale timestamp, in the past and in the future', () => {
      expect(verifySlackSignature(SECRET, request, AT_MS + MAX_REQUEST_AGE_MS + 1000)).toBe(
        'stale timestamp',
      );
      expect(verifySlackSignature(SECRET, request, AT_MS - MAX_REQUEST_AGE_MS - 1000)).toBe(
        'stale timestamp',
      );
      expect(verifySlackSignature(SECRET, { ...request, timestamp: 'soon' }, AT_MS)).toBe('stale timestamp');
    });
  });

  describe('when a header is missing', () => {
    it('reports missing headers', () => {
      expect(verifySlackSignature(SECRET, { ...request, signature: undefined }, AT_MS)).toBe(
        'missing headers',
      );
      expect(verifySlackSignature(SECRET, { ...request, timestamp: undefined }, AT_MS)).toBe(
        'missing headers',
      );
    });
  });
});
