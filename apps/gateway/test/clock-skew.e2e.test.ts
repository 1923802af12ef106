import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { postgresReachable } from '@switchboard/testkit/postgres';
import { redisReachable } from '@switchboard/testkit/redis';
import { type FakeTelegram, startFakeTelegram } from '@switchboard/testkit/telegram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePipeline, startFakePipeline } from './fake-pipeline.js';
import {
  type ServeProcess,
  eventually,
  get,
  post,
  startServe,
  tempDir,
  writeConfig,
} from './serve-process.js';
import { describeStores } from './shared-stores.js';

// Replicas whose host clocks disagree (docs/design.md §5 "Single-owner connections"): real `switchboard serve`
// processes under libfaketime (Debian's `faketime` package), one 20 s behind and one 20 s ahead,
// sharing a Telegram bot (long polling, one consumer per token) and the HTTP channel on one Redis.

/** libfaketime's thread-safe build, as Debian installs it. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

/** Whether these tests can run; CI (CI=true) must never skip them. */
function runnable(): boolean {
  if (existsSync(LIBFAKETIME)) return true;
  if (process.env.CI === 'true') throw new Error(`the clock skew tests need libfaketime at ${LIBFAKETIME}`);
  console.warn('\n!!! SKIPPING the clock skew tests: install the faketime package !!!\n');
  return false;
}

const reachable = (await redisReachable()) && (await postgresReachable()) && runnable();

/** How often a holder renews its channel lease (`DEFAULT_LEASE_TIMING.renewEveryMs`). */
const RENEW_EVERY_MS = 5_000;

/** The environment that puts a process's wall clock at the offset written in `file` ("+20s"). */
function skewedClock(file: string, offset: string): NodeJS.ProcessEnv {
  writeFileSync(file, offset);
  return {
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_TIMESTAMP_FILE: file,
    // Re-read every second, so that a test can step the clock of a running process.
    FAKETIME_CACHE_DURATION: '1',
    // A host clock step leaves the monotonic clock alone; so does this one.
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

/** Where a replica runs channel `tg`, from its `/readyz`. */
async function stateOf(replica: ServeProcess): Promise<string | undefined> {
  const answer = await get(`${replica.url}/readyz`).catch(() => null);
  return answer?.body?.checks?.['channel.tg']?.state;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe.skipIf(!reachable)('replicas whose clocks are 40 s apart (end to end, libfaketime)', () => {
  const stores = describeStores('concurrency: { pipeline: 2 }');
  const dir = tempDir();
  const behindClock = join(dir, 'behind.faketime');
  const aheadClock = join(dir, 'ahead.faketime');
  let fake: FakeTelegram;
  let backend: FakePipeline;
  let behind: ServeProcess;
  let ahead: ServeProcess;
  let nextUser = 700_000;

  /** Pushes one update per text, each from a chat of its own; resolves their chat ids. */
  function push(texts: readonly string[]): number[] {
    return texts.map((text) => {
      nextUser += 1;
      const from = { id: nextUser, is_bot: false, first_name: `User ${nextUser}` };
      const chat = { id: nextUser, first_name: from.first_name, type: 'private' };
      fake.pushUpdate({ message: fake.message({ from, chat, text }) });
      return nextUser;
    });
  }

  /** Sends `texts` over HTTP, alternating replicas, each waiting for its answer. */
  async function sendOverHttp(texts: readonly string[]): Promise<void> {
    const answers = await Promise.all(
      texts.map((text, index) =>
        post(`${(index % 2 === 0 ? behind : ahead).url}/v1/messages`, {
          session_id: `skew-${text}`,
          user_id: 'u1',
          text,
          wait: true,
        }),
      ),
    );
    for (const answer of answers)
      expect(answer.body, JSON.stringify(answer.body)).toMatchObject({ status: 'completed' });
  }

  /** Telegram updates and HTTP messages at once; each runs once and each chat is answered once. */
  async function traffic(tag: string): Promise<void> {
    const telegramTexts = Array.from({ length: 10 }, (_, index) => `${tag} tg ${index}`);
    const httpTexts = Array.from({ length: 10 }, (_, index) => `${tag} http ${index}`);
    const chats = push(telegramTexts);
    await sendOverHttp(httpTexts);
    await eventually(() => chats.every((chat) => fake.deliveredTo(chat).length === 1), 30_000);
    for (const text of [...telegramTexts, ...httpTexts]) {
      expect(backend.requests.filter((request) => request.text === text).length, text).toBe(1);
    }
    for (const chat of chats) expect(fake.deliveredTo(chat)).toHaveLength(1);
  }

  beforeAll(async () => {
    fake = await startFakeTelegram();
    backend = await startFakePipeline({ delayMs: 150 });
    const configPath = writeConfig(
      dir,
      stores.yaml(`channels:
  - { id: tg, type: telegram, token: "${fake.token}", mode: polling, api_root: "${fake.url}" }
  - { id: api, type: openapi }
pipelines: [{ id: bot, type: http, url: "${backend.url}" }]
routing: { default: bot }
`),
    );
    // The one behind starts first and takes the polling lease; its deadline, on its own clock,
    // would read 25 s past on the other's.
    behind = await startServe({ dir: tempDir(), configPath, env: skewedClock(behindClock, '-20s') });
    await eventually(async () => (await stateOf(behind)) === 'active', 30_000);
    ahead = await startServe({ dir: tempDir(), configPath, env: skewedClock(aheadClock, '+20s') });
  }, 90_000);

  afterAll(async () => {
    await Promise.all([behind?.stop('SIGKILL'), ahead?.stop('SIGKILL')]);
    await fake?.close();
    await backend?.close();
    await stores.remove();
  });

  it('runs the processes at the offsets asked for', async () => {
    const offsetOf = async (replica: ServeProcess) => {
      const answer = await fetch(`${replica.url}/healthz`);
      return Date.parse(answer.headers.get('date') ?? '') - Date.now();
    };
    expect(await offsetOf(behind)).toBeLessThan(-15_000);
    expect(await offsetOf(ahead)).toBeGreaterThan(15_000);
  });

  it('polls on one replica only across renewals: the one ahead stays on standby', {
    timeout: 90_000,
  }, async () => {
    const from = performance.now();
    await traffic('steady');
    // Both replicas renew or try to acquire every few seconds; let two renewal periods pass.
    await pause(from + 2 * RENEW_EVERY_MS + 1_000 - performance.now());
    expect(await stateOf(behind)).toBe('active');
    expect(await stateOf(ahead)).toBe('standby');
    expect(fake.maxOpenPolls(), 'getUpdates calls open at once').toBe(1);
    expect(backend.maxConcurrent, 'pipeline calls at once (concurrency.pipeline: 2)').toBeLessThanOrEqual(2);
  });

  it('keeps one poller when the standby clock steps 30 s further ahead mid-run', {
    timeout: 90_000,
  }, async () => {
    writeFileSync(aheadClock, '+50s');
    await eventually(async () => {
      const answer = await fetch(`${ahead.url}/healthz`);
      return Date.parse(answer.headers.get('date') ?? '') - Date.now() > 45_000;
    }, 10_000);
    const from = performance.now();
    // Turns run on both replicas: one whose pool clock stepped too would take the other's turn
    // leases for expired, and run its messages again.
    await traffic('stepped');
    await pause(from + 2 * RENEW_EVERY_MS + 1_000 - performance.now());
    expect(await stateOf(behind)).toBe('active');
    expect(await stateOf(ahead)).toBe('standby');
    expect(fake.maxOpenPolls(), 'getUpdates calls open at once').toBe(1);
  });
});
