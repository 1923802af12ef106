import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type LogLine,
  eventually,
  get,
  resolvesWithin,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
} from './serve-process.js';

// The config-reload container of deploy/kubernetes: the real script beside the real gateway, on a
// folder laid out and updated as the kubelet does a mounted ConfigMap.

const SCRIPT = fileURLToPath(new URL('../../../deploy/kubernetes/base/config-reload.mjs', import.meta.url));
const TOKEN = 'config-reload-token';

/** The config with one routing rule named `rule`; `adminToken` '' leaves the admin API to loopback. */
function configWithRule(dir: string, rule: string, adminToken = TOKEN): string {
  return testConfig(
    dir,
    `admin: { token: "${adminToken}" }
channels:
  - { id: api, type: openapi }
pipelines:
  - { id: echo, type: echo }
routing:
  rules:
    - { name: ${rule}, type: message_content, operator: contains, value: x, pipeline: echo }
  default: echo
`,
  );
}

/**
 * A ConfigMap volume as the kubelet writes it: the file is a link through `..data` to a
 * timestamped folder, and an update writes a new folder and renames a new `..data` link over the
 * old one, so the file's path never shows a half-written file.
 */
function configMapVolume(dir: string, text: string) {
  const volume = join(dir, 'config');
  let version = 0;
  const writeVersion = (content: string) => {
    version += 1;
    const folder = `..version_${version}`;
    mkdirSync(join(volume, folder), { recursive: true });
    writeFileSync(join(volume, folder, 'switchboard.yaml'), content);
    symlinkSync(folder, join(volume, '..data_tmp'));
    renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
  };
  writeVersion(text);
  symlinkSync(join('..data', 'switchboard.yaml'), join(volume, 'switchboard.yaml'));
  return { path: join(volume, 'switchboard.yaml'), update: writeVersion };
}

/** Runs the script against `reloadUrl`, polling every 50 ms; its JSON log lines collect in `logs`. */
function startReloader(configPath: string, reloadUrl: string, token: string) {
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      ...process.env,
      SWITCHBOARD_CONFIG: configPath,
      RELOAD_URL: reloadUrl,
      SWITCHBOARD_ADMIN_TOKEN: token,
      POLL_MS: '50',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: LogLine[] = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) logs.push(JSON.parse(line) as LogLine);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, logs, exited };
}

async function ruleNames(url: string): Promise<string[]> {
  const answer = await get(`${url}/admin/routing`, { authorization: `Bearer ${TOKEN}` });
  return answer.body.rules.map((rule: { name: string }) => rule.name);
}

describe('config-reload.mjs', () => {
  const cleanup = useCleanups();

  /** The gateway with `adminToken`, and the script beside it sending `token`. */
  async function setUp(token: string, adminToken = TOKEN) {
    const dir = tempDir();
    const volume = configMapVolume(dir, configWithRule(dir, 'first', adminToken));
    const gateway = await startServe({ dir, configPath: volume.path });
    cleanup(() => gateway.stop('SIGKILL'));
    const reloader = startReloader(volume.path, `${gateway.url}/admin/reload`, token);
    cleanup(async () => {
      reloader.child.kill('SIGKILL');
      await reloader.exited;
    });
    await eventually(() => reloader.logs.some((line) => line.msg === 'watching config'), 10_000, 'the watch');
    return { dir, volume, gateway, reloader };
  }

  describe('when the kubelet swaps in a new version of the ConfigMap', () => {
    it('has the gateway reload its routing rules, with the admin token', async () => {
      const { dir, volume, gateway, reloader } = await setUp(TOKEN);
      expect(await ruleNames(gateway.url)).toEqual(['first']);
      volume.update(configWithRule(dir, 'second'));
      await eventually(async () => (await ruleNames(gateway.url)).includes('second'), 10_000, 'the new rule');
      expect(await ruleNames(gateway.url)).toEqual(['second']);
      await eventually(() => reloader.logs.some((line) => line.msg === 'reloaded'), 10_000, 'the log');
    });
  });

  describe('when no admin token is configured', () => {
    it('reloads as a loopback client, sending none', async () => {
      const { dir, volume, gateway } = await setUp('', '');
      volume.update(configWithRule(dir, 'second', ''));
      await eventually(async () => (await ruleNames(gateway.url)).includes('second'), 10_000, 'the new rule');
    });
  });

  describe('when the gateway refuses the reload', () => {
    it('logs the refusal with its status and keeps the old rules', async () => {
      const { dir, volume, gateway, reloader } = await setUp('wrong-token');
      volume.update(configWithRule(dir, 'second'));
      const refused = await eventually(
        () => reloader.logs.find((line) => line.msg === 'reload refused'),
        10_000,
        'the refusal',
      );
      expect(refused).toMatchObject({ level: 50, status: 401 });
      expect(await ruleNames(gateway.url)).toEqual(['first']);
    });
  });

  describe('when the pod stops', () => {
    it('exits with 0 on SIGTERM, as PID 1 of its container must handle it itself', async () => {
      const { reloader } = await setUp(TOKEN);
      reloader.child.kill('SIGTERM');
      expect(await resolvesWithin(reloader.exited, 5_000, 'the exit')).toEqual({ code: 0, signal: null });
    });
  });
});
