import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { eventually, post, tempDir } from './serve-process.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The address of the gateway's `listening` log line, once it has been printed. */
function listeningAddress(output: string): string | undefined {
  // The last piece may be a line still being written.
  for (const line of output.split('\n').slice(0, -1)) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; address?: string };
    if (entry.msg === 'listening') return entry.address;
  }
  return undefined;
}

describe('quick start (README)', () => {
  describe('when a newcomer runs the README command in a fresh clone', () => {
    it('installs, builds and serves the echo pipeline on the HTTP channel', {
      timeout: 600_000,
    }, async () => {
      const clone = join(tempDir(), 'switchboard');
      execFileSync('git', ['clone', '--quiet', ROOT, clone]);
      // The README's run command, with PORT=0 so that a busy 8080 cannot fail the test.
      const child = spawn('npm', ['start'], {
        cwd: clone,
        env: { ...process.env, PORT: '0', CI: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      try {
        const address = await Promise.race([
          eventually(() => listeningAddress(output), 540_000),
          exited.then((code) => {
            throw new Error(`npm start exited with ${code}:\n${output.slice(-3000)}`);
          }),
        ]);
        const port = new URL(address).port;
        const answer = await post(`http://127.0.0.1:${port}/v1/messages`, {
          session_id: 's1',
          user_id: 'u1',
          text: 'hello',
        });
        expect(answer.status).toBe(200);
        expect(answer.body).toMatchObject({ status: 'completed', replies: [{ text: 'hello' }] });
      } finally {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
        await exited;
      }
    });
  });
});
