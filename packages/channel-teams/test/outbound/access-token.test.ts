import { type FakeTeams, startFakeTeams } from '@switchboard/testkit/teams';
import { afterEach, describe, expect, it } from 'vitest';
import { REFRESH_BEFORE_EXPIRY_MS, createAccessTokens } from '../../src/outbound/access-token.js';

let fake: FakeTeams | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function tokensAt(clock: { nowMs: number }, password?: string) {
  fake = await startFakeTeams({ tokenLifetimeSec: 3600 });
  return createAccessTokens({
    channelId: 'ms',
    tokenUrl: fake.tokenUrl,
    appId: fake.appId,
    appPassword: password ?? fake.appPassword,
    timeoutMs: 2_000,
    now: () => clock.nowMs,
  });
}

describe('createAccessTokens', () => {
  describe('when tokens are asked for while one is valid', () => {
    it('fetches one for concurrent callers and keeps it until shortly before it expires', async () => {
      const clock = { nowMs: 1_000_000 };
      const tokens = await tokensAt(clock);
      const [first, second] = await Promise.all([tokens.get(), tokens.get()]);
      expect(first).toBe(second);
      expect(fake?.tokensIssued()).toBe(1);
      clock.nowMs += 3600_000 - REFRESH_BEFORE_EXPIRY_MS - 1;
      expect(await tokens.get()).toBe(first);
      clock.nowMs += 1;
      const refreshed = await tokens.get();
      expect(refreshed).not.toBe(first);
      expect(fake?.tokensIssued()).toBe(2);
      expect(tokens.secrets()).toEqual([fake?.appPassword, first, refreshed]);
    });
  });

  describe('when the connector refused the cached token', () => {
    it('fetches a new one on the next call', async () => {
      const tokens = await tokensAt({ nowMs: 0 });
      const first = await tokens.get();
      tokens.forget(first);
      expect(await tokens.get()).not.toBe(first);
    });
  });

  describe('when the app password is refused', () => {
    it('rejects SB_CHANNEL_AUTH_FAILED naming app_password, without the password', async () => {
      const tokens = await tokensAt({ nowMs: 0 }, 'wrong-app-password');
      const error = await tokens.get().catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 'SB_CHANNEL_AUTH_FAILED' });
      const { message, details } = error as { message: string; details: unknown };
      expect(message).toContain('check channels[ms].app_password');
      expect(message).toContain('HTTP 401');
      expect(JSON.stringify({ message, details })).not.toContain('wrong-app-password');
    });
  });

  describe("when the caller's deadline has passed", () => {
    it("rejects with the signal's reason and fetches nothing", async () => {
      const tokens = await tokensAt({ nowMs: 0 });
      const controller = new AbortController();
      const reason = new Error('deadline');
      controller.abort(reason);
      await expect(tokens.get(controller.signal)).rejects.toBe(reason);
      expect(fake?.tokensIssued()).toBe(0);
    });
  });
});
