import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  CLI,
  eventually,
  serveYaml,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const addCleanup = useCleanups();

/** Text with its ANSI colour sequences removed. */
function plain(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes start with ESC
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/**
 * Starts `serve` on a pseudo-terminal (script(1) from util-linux runs the command on one and
 * copies its output) and returns its output so far, as it grows.
 */
function serveOnTerminal(env: NodeJS.ProcessEnv): { output: () => string } {
  const dir = tempDir();
  const configPath = writeConfig(dir, testConfig(dir, ''));
  const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} serve -c ${configPath}`, '/dev/null'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  addCleanup(async () => {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await exited;
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { output: () => output };
}

describe('serve log format', () => {
  describe('when stdout is a terminal', () => {
    it('writes coloured, human-readable lines, one per event, not JSON', { timeout: 30_000 }, async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm', LOG_LEVEL: 'info' };
      delete env.LOG_FORMAT;
      delete env.NO_COLOR;
      const { output } = serveOnTerminal(env);

      const listening = await eventually(
        () =>
          output()
            .split(/\r?\n/)
            .find((line) => / INFO: listening /.test(plain(line))),
        20_000,
      );

      expect(listening).toContain('\u001b['); // coloured
      const text = plain(listening);
      expect(text.trimStart().startsWith('{')).toBe(false);
      expect(text).toMatch(
        /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening \{.*"address":"http:\/\/127\.0\.0\.1:\d+"/,
      );
    });
  });

  describe('when stdout is a pipe', () => {
    it('writes one JSON object per line', { timeout: 30_000 }, async () => {
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env.LOG_FORMAT;
      const gateway = await serveYaml('', { cleanup: addCleanup, env });

      // startServe parses each stdout line as JSON and keeps those that are not in `stderr`.
      expect(gateway.logs.length).toBeGreaterThan(1);
      expect(gateway.stderr).toEqual([]);
      expect(gateway.logs.at(-1)).toMatchObject({ level: 30, msg: 'listening', service: 'switchboard' });
    });
  });

  describe('when LOG_FORMAT=json is set on a terminal', () => {
    it('writes JSON lines', { timeout: 30_000 }, async () => {
      const { output } = serveOnTerminal({ ...process.env, TERM: 'xterm', LOG_FORMAT: 'json' });

      const listening = await eventually(
        () =>
          output()
            .split(/\r?\n/)
            .find((line) => line.includes('"msg":"listening"')),
        20_000,
      );

      expect(JSON.parse(listening)).toMatchObject({ msg: 'listening', service: 'switchboard' });
    });
  });
});
