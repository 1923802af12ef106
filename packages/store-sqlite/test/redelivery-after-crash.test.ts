import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Journal,
  PipelinePolicySchema,
  createIngress,
  createMemoryQueryPool,
  createOutcomeBus,
  createRouter,
} from '@switchboard/core';
import { queuedMessageFixture } from '@switchboard/core/testing';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function temporaryFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-crash-'));
  folders.push(folder);
  return folder;
}

/**
 * What a process killed at this instant leaves on disk: the committed state of `path`, copied by
 * another connection (as a restarted process would read it) into a new file.
 */
function crashImage(path: string, into: string): string {
  const reader = new BetterSqlite3(path, { readonly: true });
  try {
    reader.prepare('VACUUM INTO ?').run(into);
  } finally {
    reader.close();
  }
  return into;
}

/** Ingress over a pool that journals to `journal`, as the gateway wires them. */
function ingressOver(journal: Journal) {
  const policy = PipelinePolicySchema.parse({ id: 'assistant' });
  const pool = createMemoryQueryPool({
    concurrency: { global: 1, perSession: 1 },
    limits: { maxPending: 100, maxPendingPerSession: 100 },
    pipelines: [policy],
    journal,
  });
  const ingress = createIngress({
    pool,
    router: () => createRouter({ default: 'assistant', rules: [] }, { pipelines: ['assistant'] }),
    outcomes: createOutcomeBus(),
    channelPolicy: () => ({ admission: { require_mention: false, prefixes: [] }, sessionScope: 'chat' }),
  });
  return { ingress, pool };
}

describe('ingress over a SQLite journal', () => {
  describe('when the process dies before the group commit that journals a delivery', () => {
    it('accepts the redelivery after the restart instead of calling it a duplicate', async () => {
      const folder = temporaryFolder();
      const path = join(folder, 'switchboard.db');
      const store = createSqliteStore({ path });
      const { message } = queuedMessageFixture(1);
      // Queued before the delivery starts, so it runs ahead of the group commit the delivery
      // schedules: the image is what a kill between the dedup decision and that commit leaves.
      let image = '';
      setImmediate(() => {
        image = crashImage(path, join(folder, 'crashed.db'));
      });
      expect((await ingressOver(store.journal).ingress.accept(message, 'update-1')).status).toBe('queued');
      store.close();

      const restarted = createSqliteStore({ path: image });
      const { ingress, pool } = ingressOver(restarted.journal);
      expect(await pool.recover()).toEqual([]);
      expect((await ingress.accept(message, 'update-1')).status).toBe('queued');
      expect((await restarted.journal.load()).map((entry) => entry.message.id)).toEqual([message.id]);
      restarted.close();
    });
  });

  describe('when the process dies after the group commit that journals a delivery', () => {
    it('recovers the message and calls the redelivery a duplicate', async () => {
      const folder = temporaryFolder();
      const path = join(folder, 'switchboard.db');
      const store = createSqliteStore({ path });
      const { message } = queuedMessageFixture(1);
      expect((await ingressOver(store.journal).ingress.accept(message, 'update-1')).status).toBe('queued');
      const image = crashImage(path, join(folder, 'crashed.db'));
      store.close();

      const restarted = createSqliteStore({ path: image });
      const { ingress, pool } = ingressOver(restarted.journal);
      expect((await pool.recover()).map((entry) => entry.message.id)).toEqual([message.id]);
      expect(await ingress.accept(message, 'update-1')).toEqual({ status: 'duplicate' });
      restarted.close();
    });
  });
});
