import { type FakeWhatsApp, startFakeWhatsApp } from '@switchboard/testkit/whatsapp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhatsAppChannelSchema } from '../src/options.js';
import { probeWhatsAppChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeWhatsAppChannel', () => {
  let fake: FakeWhatsApp;
  beforeAll(async () => {
    fake = await startFakeWhatsApp();
  });
  afterAll(() => fake.close());

  const config = (fields: { access_token?: string; phone_number_id?: string } = {}) =>
    WhatsAppChannelSchema.parse({
      id: 'wa',
      type: 'whatsapp',
      phone_number_id: fake.phoneNumberId,
      access_token: fake.accessToken,
      app_secret: fake.appSecret,
      verify_token: fake.verifyToken,
      api_url: fake.url,
      ...fields,
    });

  describe('when the token may use the number', () => {
    it('names the number, with a GET of it alone', async () => {
      expect(await probeWhatsAppChannel(config(), PROBE)).toEqual({
        level: 'ok',
        detail: 'WhatsApp number 15550783881 (Switchboard Test)',
      });
      expect(fake.calls.map((call) => `${call.method} ${call.path}`)).toEqual([
        `GET /v21.0/${fake.phoneNumberId}`,
      ]);
    });
  });

  describe('when Graph refuses the token (code 190)', () => {
    it('fails naming the credential key', async () => {
      expect(
        await probeWhatsAppChannel(config({ access_token: 'refused-whatsapp-token' }), PROBE),
      ).toMatchObject({
        level: 'fail',
        detail: expect.stringMatching(/^WhatsApp rejected the access token \(HTTP 401: 190: /),
        hint: expect.stringContaining('channels[0].access_token'),
      });
    });
  });

  describe("when the number is not the token's", () => {
    it('fails as a refusal, not as a bad token', async () => {
      const result = await probeWhatsAppChannel(config({ phone_number_id: '1' }), PROBE);
      expect(result).toMatchObject({
        level: 'fail',
        detail: expect.stringMatching(/^WhatsApp refused the check/),
      });
    });
  });
});
