import { join } from 'node:path';
import { createSqliteStore } from '@switchboard/store-sqlite';
import { describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  startServe,
  tempDir,
  testConfig,
  useCleanups,
  writeConfig,
} from './serve-process.js';

const cleanup = useCleanups();

async function setup(backend: FakePipeline, extra = '') {
  const dir = tempDir();
  const configPath = writeConfig(
    dir,
    testConfig(
      dir,
      `concurrency: { pipeline: 2 }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
${extra}`,
    ),
  );
  const start = async (): Promise<ServeProcess> => {
    const gateway = await startServe({ dir, configPath });
    cleanup(() => gateway.stop('SIGKILL'));
    return gateway;
  };
  /** The ids still journaled (read once the gateway has exited). */
  const journaled = async (): Promise<string[]> => {
    const store = createSqliteStore({ path: join(dir, 'data.db') });
    try {
      return (await store.journal.load()).map((queued) => queued.message.id);
    } finally {
      store.close();
    }
  };
  return { start, journaled };
}

/** Sends `count` messages over `sessions` sessions without waiting; returns the accepted ids. */
async function sendMany(url: string, count: number, sessions: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const answer = await post(`${url}/v1/messages`, {
      session_id: `s${i % sessions}`,
      user_id: 'u',
      text: `m${i}`,
      wait: false,
    });
    expect(answer.status).toBe(202);
    ids.push(answer.body?.id);
  }
  return ids;
}

describe('durability (end to end)', () => {
  describe('when the process is killed with 200 messages queued behind a slow pipeline', () => {
    it('delivers every accepted message after a restart; only the turns running at the kill run twice', {
      timeout: 120_000,
    }, async () => {
      const backend = await startFakePipeline({ delayMs: 100 });
      cleanup(() => backend.close());
      const { start } = await setup(backend);
      const first = await start();
      const accepted = await sendMany(first.url, 200, 20);
      await eventually(() => backend.requests.length >= 6);
      first.child.kill('SIGKILL');
      await first.exited;
      const requestedBeforeKill = new Set(backend.requests.flatMap((r) => r.messages.map((m) => m.id)));
      const countBeforeKill = backend.requests.length;
      expect(countBeforeKill).toBeLessThan(200);

      const second = await start();
      // A message still queued at the kill is known at once: the restart follows it from the journal.
      const waiting = accepted.filter((id) => !requestedBeforeKill.has(id)).at(-1) as string;
      const status = await get(`${second.url}/v1/messages/${waiting}`);
      expect(status.status).toBe(200);
      expect(['queued', 'running', 'completed']).toContain(status.body.status);
      const seen = await eventually(() => {
        const ids = new Set(backend.requests.flatMap((r) => r.messages.map((m) => m.id)));
        return ids.size >= 200 && ids;
      }, 60_000);
      expect([...seen].sort()).toEqual([...accepted].sort());

      const runs = new Map<string, number[]>();
      for (const request of backend.requests) {
        for (const message of request.messages)
          runs.set(message.id, [...(runs.get(message.id) ?? []), request.attempt]);
      }
      const twice = [...runs].filter(([, attempts]) => attempts.length > 1);
      // At most the 2 turns in flight at the kill ran again, each with a higher attempt.
      expect(twice.length).toBeLessThanOrEqual(2);
      for (const [id, attempts] of twice) {
        expect(requestedBeforeKill.has(id)).toBe(true);
        expect(attempts).toEqual([1, 2]);
      }
      expect([...runs.values()].every((attempts) => attempts.length <= 2)).toBe(true);
    });
  });

  describe('when SIGTERM arrives under load', () => {
    it('turns /readyz 503, finishes running turns, starts no queued one, exits 0; a restart runs each of the rest exactly once', {
      timeout: 90_000,
    }, async () => {
      const backend = await startFakePipeline();
      cleanup(() => backend.close());
      // Every request waits until released, so the turns running at the signal are exactly the
      // 2 the pipeline's slots hold, however fast or slow this machine is.
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const echo = backend.respond;
      backend.respond = async (request) => {
        await held;
        return echo(request);
      };
      const { start, journaled } = await setup(backend);
      const gateway = await start();
      expect((await get(`${gateway.url}/readyz`)).status).toBe(200);
      const accepted = await sendMany(gateway.url, 30, 3);
      await eventually(() => backend.requests.length === 2);
      gateway.child.kill('SIGTERM');
      const readiness = await eventually(async () => {
        const answer = await get(`${gateway.url}/readyz`).catch(() => undefined);
        return answer?.status === 503 && answer;
      });
      expect(readiness.body.checks.draining.ok).toBe(false);
      const late = await post(`${gateway.url}/v1/messages`, {
        session_id: 'late',
        user_id: 'u',
        text: 'late',
      }).catch(() => undefined);
      if (late !== undefined) expect(late.status).toBe(503);
      release();
      expect(await gateway.exited).toBe(0);
      // docs/design.md §2: the running turns finished, no queued one started, the rest stays journaled.
      expect(backend.requests).toHaveLength(2);
      expect(await journaled()).toHaveLength(28);

      const second = await start();
      await eventually(async () => {
        const statuses = await Promise.all(accepted.map((id) => get(`${second.url}/v1/messages/${id}`)));
        return statuses.every((status) => status.body?.status === 'completed');
      }, 60_000);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      // Nothing is journaled any more, so no run can follow: the runs counted now are all there
      // will be. Each accepted message ran exactly once, the 2 finished in the drain included.
      expect(await journaled()).toEqual([]);
      const runs = backend.requests.flatMap((request) => request.messages.map((message) => message.id));
      expect(runs.sort()).toEqual([...accepted].sort());
    });
  });
});
