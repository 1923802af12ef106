import { type FakeTeams, startFakeTeams } from '@switchboard/testkit/teams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TeamsChannelSchema } from '../src/options.js';
import { probeTeamsChannel } from '../src/probe.js';

const PROBE = { configPath: 'channels[0]', timeoutMs: 2000 };

describe('probeTeamsChannel', () => {
  let fake: FakeTeams;
  beforeAll(async () => {
    fake = await startFakeTeams();
  });
  afterAll(() => fake.close());

  const config = (password: string) =>
    TeamsChannelSchema.parse({
      id: 'ms',
      type: 'teams',
      app_id: fake.appId,
      app_password: password,
      openid_metadata_url: fake.openIdMetadataUrl,
      token_url: fake.tokenUrl,
    });

  describe('when the app password is good', () => {
    it('gets a token and calls no connector', async () => {
      expect(await probeTeamsChannel(config(fake.appPassword), PROBE)).toMatchObject({ level: 'ok' });
      expect(fake.tokensIssued()).toBe(1);
      expect(fake.calls).toEqual([]);
    });
  });

  describe('when the app password is refused', () => {
    it('fails naming the credential key, without the password', async () => {
      const result = await probeTeamsChannel(config('refused-teams-password'), PROBE);
      expect(result).toMatchObject({
        level: 'fail',
        detail: expect.stringMatching(/^Microsoft Entra rejected the app id and password \(HTTP 401/),
        hint: expect.stringContaining('channels[0].app_password'),
      });
      expect(JSON.stringify(result)).not.toContain('refused-teams-password');
    });
  });
});
