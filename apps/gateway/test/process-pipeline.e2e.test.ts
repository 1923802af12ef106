import { chownSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { processExists } from '@switchboard/testkit/process';
import { describe, expect, it } from 'vitest';
import {
  eventually,
  get,
  post,
  resolvesWithin,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

/** The test worker of the pipelines package (its header says how its turns' texts steer it). */
const ECHO_WORKER = fileURLToPath(
  new URL('../../../packages/pipelines/test/fixtures/echo-worker.mjs', import.meta.url),
);

/**
 * A root gateway refuses a `process` pipeline without `run_as`: as root (CI), the gateway runs as
 * an unprivileged user of its own, as a deployment without `run_as` does, owning `folders`.
 */
const GATEWAY_USER = 1000;
function asGatewayUser(...folders: string[]): string[] | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const folder of folders) chownSync(folder, GATEWAY_USER, GATEWAY_USER);
  return ['setpriv', `--reuid=${GATEWAY_USER}`, `--regid=${GATEWAY_USER}`, '--clear-groups', '--'];
}

interface WorkerEvent {
  pid: number;
  at: number;
  event: string;
  id?: string;
  text?: string;
}

/**
 * A gateway whose default pipeline `agent` runs `command` (default: the echo worker), with
 * `pipeline` keys added and `rest` ending the config.
 */
async function gatewayWithWorkers(
  pipeline: string,
  rest = '',
  command = process.execPath,
  workerEnv: Record<string, string> = {},
) {
  const dir = tempDir();
  const workerLog = join(dir, 'worker.log');
  const configPath = writeConfig(
    dir,
    testConfig(
      dir,
      `pipelines:
  - id: agent
    type: process
    command: ${JSON.stringify(command)}
    args: [${JSON.stringify(ECHO_WORKER)}]
    env: ${JSON.stringify({ WORKER_LOG: workerLog, ...workerEnv })}
${pipeline}routing: { default: agent }
${rest}`,
    ),
  );
  const gateway = await startServe({ dir, configPath, wrapper: asGatewayUser(dir) });
  cleanup(() => gateway.stop('SIGKILL'));
  const events = (): WorkerEvent[] =>
    existsSync(workerLog)
      ? readFileSync(workerLog, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as WorkerEvent)
      : [];
  // Worker processes outlive a gateway killed in a failed test only until their stdin closes.
  cleanup(async () => {
    for (const { pid } of events()) if (processExists(pid)) process.kill(pid, 'SIGKILL');
  });
  return { gateway, events };
}

describe('process pipeline (end to end)', () => {
  describe('when its worker is killed with SIGKILL mid-turn', () => {
    it('retries the turn on a worker restarted after the backoff and drops the dead generation’s late answer', async () => {
      const { gateway, events } = await gatewayWithWorkers(`    restart: { base_delay: 1s }
    retry: { base_delay: 200ms, max_delay: 5s }
`);
      const answer = post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u',
        text: 'late 2500',
        timeout_ms: 30_000,
      });
      // Killed once the process that will write its late answer exists.
      await eventually(() => events().find((event) => event.event === 'late'));
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      const killedAt = Date.now();
      process.kill(turn.pid, 'SIGKILL');

      const { status, body } = await answer;
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: 'completed' });
      const reply = JSON.parse(body?.replies[0].text);
      expect(reply).toMatchObject({ text: 'late 2500', n: 1 });
      expect(reply.pid).not.toBe(turn.pid);
      const starts = events().filter((event) => event.event === 'start');
      expect(starts).toHaveLength(2);
      expect(starts[1]?.at).toBeGreaterThanOrEqual(killedAt + 1000);
      expect(gateway.logs.some((line) => line.msg === 'turn failed, retrying')).toBe(true);
      const stale = await eventually(() =>
        gateway.logs.find((line) => String(line.msg).startsWith('stale answer')),
      );
      expect(stale).toMatchObject({ level: 40, pipeline: 'agent', worker: 0, generation: 1 });

      const metrics = await get(`${gateway.url}/metrics`);
      expect(metrics.body).toContain('switchboard_pipeline_sessions{pipeline="agent"} 1');
      const queues = await get(`${gateway.url}/admin/queues`);
      expect(queues.body.pipelines.agent).toMatchObject({
        state: 'ready',
        sessions: 1,
        details: { workers: [{ index: 0, state: 'ready', generation: 2, restarts: 1, pid: reply.pid }] },
      });
    });
  });

  describe('when its worker crashes once on each message and max_attempts is 2', () => {
    it('completes every message on its second attempt, waiting for the restart; each has one outcome', async () => {
      const { gateway, events } = await gatewayWithWorkers(`    restart: { base_delay: 1s }
    retry: { max_attempts: 2, base_delay: 200ms, max_delay: 200ms }
`);
      const markers = tempDir();
      asGatewayUser(markers);
      const ids: string[] = [];
      for (const trial of [1, 2, 3, 4, 5, 6]) {
        const text = `crash-once ${join(markers, String(trial))}`;
        const answer = await post(`${gateway.url}/v1/messages`, {
          session_id: `s${trial}`,
          user_id: 'u',
          text,
          timeout_ms: 30_000,
        });
        // The retry came 200 ms after the crash, while the worker restarted (1 s): it waited.
        expect(answer.body, `trial ${trial}`).toMatchObject({ status: 'completed' });
        expect(JSON.parse(answer.body?.replies[0].text)).toMatchObject({ text });
        ids.push(answer.body?.id);
      }
      expect(events().filter((event) => event.event === 'exit')).toHaveLength(6);
      // Each worker got ready before its crash: every restart waited the base delay, no longer.
      const crashes = gateway.logs.filter((line) => line.msg === 'worker exited; restarting after backoff');
      expect(crashes.map((line) => line.restartInMs)).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
      // One outcome each: completed (completed messages are not audited), no dead letter beside it.
      for (const id of ids) {
        const { body } = await get(`${gateway.url}/admin/messages/${id}`);
        expect(body, id).toMatchObject({ outcome: { status: 'completed' }, audit: [] });
      }
      const deadLetters = await get(`${gateway.url}/admin/audit?outcome=dead_lettered`);
      expect(deadLetters.body.items).toEqual([]);
    }, 120_000);
  });

  describe('when its command cannot start', () => {
    it('goes failed, retries then dead-letters the message, names it in /readyz, and stops promptly', async () => {
      const { gateway } = await gatewayWithWorkers(
        `    retry: { max_attempts: 3, base_delay: 200ms, max_delay: 1s }
`,
        '',
        '/nonexistent/agent-worker',
      );
      const ready = await get(`${gateway.url}/readyz`);
      expect(ready.body.checks['pipeline.agent']).toEqual({ ok: true, detail: 'listening' });

      const answer = await post(`${gateway.url}/v1/messages`, { session_id: 's1', user_id: 'u', text: 'hi' });

      expect(answer.body).toMatchObject({ status: 'dead_lettered', reason: 'max_attempts' });
      const failures = gateway.logs.filter(
        (line) => line.msg === 'worker failed to start; restarting after backoff',
      );
      // One start, restarting 5 s later (the default); the retries in between did not start more.
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatchObject({ level: 50, restartInMs: 5000 });
      const readyz = await get(`${gateway.url}/readyz`);
      expect(readyz.status).toBe(503);
      expect(readyz.body.checks['pipeline.agent']).toMatchObject({ ok: false });
      expect(readyz.body.checks['pipeline.agent'].detail).toMatch(/^failed: .*ENOENT.*; restart in \d+ ms$/);
      const queues = await get(`${gateway.url}/admin/queues`);
      expect(queues.body.pipelines.agent).toMatchObject({ state: 'failed', ok: false, sessions: 0 });

      const stoppedAt = Date.now();
      expect(await resolvesWithin(gateway.stop('SIGTERM'), 10_000, 'the gateway exit')).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    });
  });

  describe('when the gateway exits without draining (a second SIGTERM) while a worker runs', () => {
    it('kills the worker, even one that ignores its stdin closing', async () => {
      const { gateway, events } = await gatewayWithWorkers('', '', process.execPath, {
        WORKER_ON_EOF: 'ignore',
      });
      void post(`${gateway.url}/v1/messages`, {
        session_id: 's1',
        user_id: 'u',
        text: 'stubborn 60000',
      }).catch(() => {});
      const turn = await eventually(() => events().find((event) => event.event === 'turn'));
      gateway.child.kill('SIGTERM');
      await eventually(() => gateway.logs.some((line) => line.msg === 'shutting down'));

      expect(await resolvesWithin(gateway.stop('SIGTERM'), 10_000, 'the gateway exit')).toBe(1);

      await eventually(() => !processExists(turn.pid));
    });
  });

  describe('when the gateway drains while worker turns run', () => {
    it('lets them finish within drain_timeout, then stops the workers and leaves no process behind', async () => {
      const { gateway, events } = await gatewayWithWorkers(
        `    workers: 2
`,
        `shutdown: { drain_timeout: 5s }
`,
      );
      const answers = ['s1', 's2'].map((session) =>
        post(`${gateway.url}/v1/messages`, { session_id: session, user_id: 'u', text: 'slow 1500' }),
      );
      const turns = await eventually(() => {
        const found = events().filter((event) => event.event === 'turn');
        return found.length === 2 && found;
      });
      const pids = turns.map((turn) => turn.pid);
      expect(new Set(pids).size).toBe(2);

      const stoppedAt = Date.now();
      expect(await resolvesWithin(gateway.stop('SIGTERM'), 10_000, 'the gateway exit')).toBe(0);
      const stopMs = Date.now() - stoppedAt;

      expect(stopMs).toBeLessThan(5000);
      // Their callers were answered 202 at the drain's start (channel-openapi README: waits end
      // at once, so none holds the server open), with the message still running, not failed.
      const drained = await Promise.all(answers);
      expect(drained.map(({ status, body }) => [status, body?.status])).toEqual([
        [202, 'running'],
        [202, 'running'],
      ]);
      const answered = events()
        .filter((event) => event.event === 'answered')
        .map((event) => event.id);
      expect(answered.sort()).toEqual(turns.map((turn) => turn.id).sort());
      // Each worker saw its stdin close (the protocol's stop) and exited by itself.
      expect(
        events()
          .filter((event) => event.event === 'exit')
          .map((event) => event.pid)
          .sort(),
      ).toEqual([...pids].sort());
      for (const pid of pids) expect(processExists(pid)).toBe(false);
      expect(gateway.logs.some((line) => line.msg === 'workers stopped')).toBe(true);
      expect(gateway.logs.filter((line) => line.msg === 'dead letter' || line.level >= 50)).toEqual([]);
    });
  });
});
