import { closedPostgresUrl } from '@switchboard/testkit/postgres';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir, testConfig, useCleanups, writeConfig } from './serve-process.js';

const cleanup = useCleanups();

// Recognisable, so that any trace of it in the output is found.
const TELEGRAM_TOKEN = '987654321:SECRET-start-failure-token';

describe('switchboard serve when the gateway fails to start (end to end)', () => {
  describe("when Telegram's getMe answers an error that quotes the bot token", () => {
    it('exits 1 and prints the failure with the token masked, on stdout and stderr alike', async () => {
      const fake = await startFakeTelegram({ token: TELEGRAM_TOKEN });
      cleanup(() => fake.close());
      // A self-hosted Bot API server or a proxy that echoes the request path in its description.
      fake.failNext('getMe', 1, {
        status: 400,
        description: `Bad Request: upstream refused GET /bot${TELEGRAM_TOKEN}/getMe`,
      });
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        testConfig(
          dir,
          `channels:\n  - { id: tg, type: telegram, token: "\${TELEGRAM_TOKEN}", mode: polling, api_root: "${fake.url}/" }\n`,
        ),
      );

      const result = await runCli(['serve', '-c', configPath], { cwd: dir, env: { TELEGRAM_TOKEN } });

      expect(result.code).toBe(1);
      expect(fake.callsOf('getMe')).toHaveLength(1);
      const printed = `${result.stdout}\n${result.stderr}`;
      // The failure is told, with the platform's words, only without the token.
      expect(printed).toContain('upstream refused GET /bot');
      expect(printed).not.toContain(TELEGRAM_TOKEN);
      expect(printed).not.toContain('SECRET-start-failure-token');
    });
  });

  describe('when PostgreSQL (audit: postgres) refuses connections', () => {
    it('exits 1 with SB_STORE_UNAVAILABLE naming host, port and database, never the password', async () => {
      const url = (await closedPostgresUrl()).replace('postgres@', 'postgres:SECRET-db-password@');
      const { port } = new URL(url);
      const dir = tempDir();
      const configPath = writeConfig(
        dir,
        `server: { host: 127.0.0.1, port: 0 }\nstore: { kind: memory }\naudit: { kind: postgres, url: "${url}" }\n`,
      );

      const result = await runCli(['serve', '-c', configPath], { cwd: dir });

      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `SB_STORE_UNAVAILABLE: PostgreSQL at 127.0.0.1:${port}/test is unavailable`,
      );
      expect(`${result.stdout}\n${result.stderr}`).not.toContain('SECRET-db-password');
    });
  });
});
