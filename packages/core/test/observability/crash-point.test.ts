import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CRASH_POINTS, parseCrashAt } from '../../src/observability/crash-point.js';

const MODULE = fileURLToPath(new URL('../../src/observability/crash-point.ts', import.meta.url));

/** Runs `body` in a fresh Node process with `crash-point.ts` imported as `cp`, the env var set. */
function runWithCrashAt(crashAt: string, body: string) {
  const script = `const cp = await import(${JSON.stringify(MODULE)});\n${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, SWITCHBOARD_CRASH_AT: crashAt },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
}

describe('crash points', () => {
  describe('when SWITCHBOARD_CRASH_AT is parsed', () => {
    it('means no crash when unset or empty', () => {
      expect(parseCrashAt(undefined)).toBeUndefined();
      expect(parseCrashAt('')).toBeUndefined();
    });

    it('reads a point, and the reach to die at (the first by default)', () => {
      expect(parseCrashAt('outbox.after-add')).toEqual({ point: 'outbox.after-add', nth: 1 });
      expect(parseCrashAt('delivery.after-removal:3')).toEqual({ point: 'delivery.after-removal', nth: 3 });
    });

    it('refuses an unknown point or a count that is not a positive integer, naming the value', () => {
      expect(() => parseCrashAt('outbox.after-ad')).toThrow(/"outbox.after-ad" is not <point>\[:<nth>\]/);
      expect(() => parseCrashAt('outbox.after-add:0')).toThrow(/"outbox.after-add:0"/);
      expect(() => parseCrashAt('outbox.after-add:x')).toThrow(/"outbox.after-add:x"/);
    });

    it('knows every point once', () => {
      expect(new Set(CRASH_POINTS).size).toBe(CRASH_POINTS.length);
    });
  });

  describe('when the process reaches the armed point', () => {
    it('names the point on stderr and dies by SIGKILL at once, running nothing after it', async () => {
      const run = await runWithCrashAt(
        'send.after-platform-call',
        `cp.crashPoint('send.before-platform-call');
         console.log('before');
         cp.crashPoint('send.after-platform-call');
         console.log('after');`,
      );
      expect(run.signal).toBe('SIGKILL');
      expect(run.stdout).toBe('before\n');
      expect(run.stderr).toBe('crash point send.after-platform-call\n');
    });

    it('dies on the nth reach only', async () => {
      const run = await runWithCrashAt(
        'outbox.after-add:2',
        `cp.crashPoint('outbox.after-add');
         console.log('first reach');
         cp.crashPoint('outbox.after-add');
         console.log('second reach');`,
      );
      expect(run.signal).toBe('SIGKILL');
      expect(run.stdout).toBe('first reach\n');
    });

    it('dies after a write given to crashAfter resolved, before its awaiting caller resumes', async () => {
      const run = await runWithCrashAt(
        'settle.after-complete',
        `let committed = false;
         const write = new Promise((resolve) => setImmediate(() => { committed = true; console.log('committed'); resolve(); }));
         console.log('issued');
         await cp.crashAfter('settle.after-complete', write);
         console.log('caller resumed');`,
      );
      expect(run.signal).toBe('SIGKILL');
      expect(run.stdout).toBe('issued\ncommitted\n');
      expect(run.stderr).toBe('crash point settle.after-complete\n');
    });

    it('does nothing at a point that is not armed', async () => {
      const run = await runWithCrashAt(
        'ingress.after-journal',
        `cp.crashPoint('outbox.after-add');
         await cp.crashAfter('settle.after-retry', Promise.resolve());
         console.log('still here');`,
      );
      expect(run.signal).toBeNull();
      expect(run.code).toBe(0);
      expect(run.stdout).toBe('still here\n');
    });
  });
});
