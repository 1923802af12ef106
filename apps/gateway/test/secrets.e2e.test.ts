import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeTelegram } from '@switchboard/testkit/telegram';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  collectOutput,
  eventually,
  get,
  post,
  runCli,
  serveYaml,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

// Recognisable values: none may appear in any output of the process.
const TELEGRAM_TOKEN = '987654321:SECRET-telegram-token-e2e';
const API_KEY = 'SECRET-api-key-e2e-0123';
const NEW_API_KEY = 'SECRET-new-api-key-e2e-4567';

/** Everything a user or an operator can read: every log line and stderr. */
function everythingPrinted(gateway: { logs: unknown[]; stderr: string[] }): string {
  return `${gateway.logs.map((line) => JSON.stringify(line)).join('\n')}\n${gateway.stderr.join('')}`;
}

describe('secrets (end to end)', () => {
  describe('when a Telegram error text quotes the bot token', () => {
    it('masks it in every log line and in the audit record GET /admin/audit answers', async () => {
      const fake = await startFakeTelegram({ token: TELEGRAM_TOKEN });
      cleanup(() => fake.close());
      const gateway = await serveYaml(
        `channels:
  - { id: tg, type: telegram, token: "\${TELEGRAM_TOKEN}", mode: polling, api_root: "${fake.url}/" }
  - { id: api, type: openapi, api_keys: ["\${API_KEY}"] }
`,
        { cleanup, env: { TELEGRAM_TOKEN, API_KEY } },
      );
      await eventually(() => fake.callsOf('getUpdates').length > 0);

      // A self-hosted Bot API server or a proxy that echoes the request path in its description.
      fake.failNext('sendMessage', 1, {
        status: 400,
        description: `Bad Request: upstream refused POST /bot${TELEGRAM_TOKEN}/sendMessage`,
      });
      const chat = { id: 555_001, first_name: 'Dora', type: 'private' };
      fake.pushUpdate({
        message: fake.message({ chat, from: { id: 555_001, is_bot: false, first_name: 'Dora' }, text: 'hi' }),
      });

      const record = await eventually(async () => {
        const page = await get(`${gateway.url}/admin/audit?channel=tg`);
        return page.body.items.find((item: { chat_id: string }) => item.chat_id === '555001');
      });
      expect(record.error).toContain('Bad Request: upstream refused POST /bot***/sendMessage');
      // The failure was logged with Telegram's description, masked.
      await eventually(() => everythingPrinted(gateway).includes('/bot***/sendMessage'));

      const answered = JSON.stringify((await get(`${gateway.url}/admin/audit`)).body);
      for (const text of [answered, everythingPrinted(gateway)]) {
        expect(text).not.toContain(TELEGRAM_TOKEN);
        expect(text).not.toContain('SECRET-');
      }
    });
  });

  describe('when a reloaded file gives a secret field a value of the wrong type', () => {
    it('refuses it naming the type, never the value, in the answer and the logs', async () => {
      const gateway = await serveYaml('channels: [{ id: api, type: openapi, api_keys: ["${API_KEY}"] }]\n', {
        cleanup,
        env: { API_KEY, NEW_API_KEY },
      });

      // The new key is not among the loaded secrets: only the config error's wording keeps it out.
      writeFileSync(
        gateway.configPath,
        testConfig(gateway.dir, 'channels: [{ id: api, type: openapi, api_keys: "${NEW_API_KEY}" }]\n'),
      );
      const refused = await post(`${gateway.url}/admin/reload`, {});
      expect(refused.status).toBe(400);
      expect(refused.body?.error.message).toContain('channels[0].api_keys: expected array, got a string');
      gateway.child.kill('SIGHUP');
      await eventually(() => gateway.logs.some((line) => line.msg.startsWith('reload refused')));

      for (const text of [JSON.stringify(refused.body), everythingPrinted(gateway)]) {
        expect(text).not.toContain(NEW_API_KEY);
        expect(text).not.toContain(API_KEY);
      }
    });
  });

  describe('when a ${file:} reference names a FIFO', () => {
    it('`config check` refuses it as not a regular file instead of waiting for a writer', async () => {
      const dir = tempDir();
      const fifo = join(dir, 'token-fifo');
      execFileSync('mkfifo', [fifo]);
      const path = writeConfig(dir, `admin: { token: "\${file:${fifo}}" }\n`);
      const child = spawn(process.execPath, [CLI, 'config', 'check', '-c', path], {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanup(async () => child.kill('SIGKILL'));

      const result = await collectOutput(child);

      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`admin.token: cannot read the file ${fifo}: not a regular file`);
    });
  });

  describe('when serve starts with such a file', () => {
    it('exits naming the type of the value, not the value', async () => {
      const dir = tempDir();
      const path = writeConfig(dir, 'channels: [{ id: api, type: openapi, api_keys: "${API_KEY}" }]\n');

      const result = await runCli(['serve', '-c', path], { cwd: dir, env: { API_KEY } });

      expect(result.code).toBe(1);
      expect(result.stderr).toContain('channels[0].api_keys: expected array, got a string');
      expect(`${result.stdout}${result.stderr}`).not.toContain(API_KEY);
    });
  });
});
