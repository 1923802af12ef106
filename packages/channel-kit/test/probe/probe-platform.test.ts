import { describe, expect, it } from 'vitest';
import { channelFailure } from '../../src/outbound/channel-failure.js';
import type { PlatformFailure } from '../../src/outbound/platform-failure.js';
import { probePlatform } from '../../src/probe/probe-platform.js';

const WHERE = { type: 'example', channelId: 'ex', call: 'whoami' };
const TARGET = {
  platform: 'Example',
  apiUrl: 'https://api.example.test',
  credential: 'the token',
  credentialPath: 'channels[3].token',
};

/** The probe's result when its call fails with `failure`, as `requestPlatform` reports it. */
const probeFailing = (failure: PlatformFailure, target = TARGET) =>
  probePlatform(target, async () => {
    throw channelFailure(WHERE, failure, { secrets: ['example-secret-token'] });
  });

describe('probePlatform', () => {
  describe('when the call succeeds', () => {
    it("returns the probe's own result", async () => {
      const result = await probePlatform(TARGET, async () => ({ level: 'ok', detail: 'Example bot' }));
      expect(result).toEqual({ level: 'ok', detail: 'Example bot' });
    });
  });

  describe('when the call fails', () => {
    it('names a refused credential with its config key', async () => {
      expect(await probeFailing({ status: 401, description: 'Unauthorized' })).toEqual({
        level: 'fail',
        detail: 'Example rejected the token (HTTP 401: Unauthorized)',
        hint: 'check channels[3].token (or the variable or file it reads)',
      });
    });

    it('names the API base when no answer came', async () => {
      expect(await probeFailing({ network: 'ECONNREFUSED' })).toMatchObject({
        level: 'fail',
        detail: 'Example API at https://api.example.test is unreachable: ECONNREFUSED',
      });
    });

    it('only warns when rate-limited: the platform answered, the credential is not judged', async () => {
      expect(await probeFailing({ status: 429, retryAfterMs: 1000 })).toMatchObject({ level: 'warn' });
    });

    it("fails with the platform's words when it fails or refuses the call", async () => {
      expect(await probeFailing({ status: 503, description: 'down for maintenance' })).toMatchObject({
        level: 'fail',
        detail: 'Example failed to answer (HTTP 503: down for maintenance)',
      });
      expect(await probeFailing({ status: 400, code: 100, description: 'no such number' })).toMatchObject({
        level: 'fail',
        detail: 'Example refused the check (HTTP 400: 100: no such number)',
        hint: 'check the other settings of channels[3]',
      });
    });

    it("reads the failure the platform's way first", async () => {
      const target = { ...TARGET, kindOf: () => 'auth' as const };
      expect(await probeFailing({ status: 404, description: 'Not Found' }, target)).toMatchObject({
        level: 'fail',
        detail: 'Example rejected the token (HTTP 404: Not Found)',
      });
    });
  });

  describe('when the probe itself throws something else', () => {
    it('lets it propagate', async () => {
      await expect(
        probePlatform(TARGET, async () => {
          throw new TypeError('a bug');
        }),
      ).rejects.toThrow('a bug');
    });
  });
});
