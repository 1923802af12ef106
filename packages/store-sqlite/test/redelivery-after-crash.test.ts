import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Journal,
  type Outcome,
  type OutcomeSink,
  PipelinePolicySchema,
  createIngress,
  createMemoryQueryPool,
  createOutcomeBus,
  createRouter,
  deliveryOf,
} from '@switchboard/core';
import { auditRecordFixture, queuedMessageFixture } from '@switchboard/contracts';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type SqliteStore, createSqliteStore } from '../src/index.js';

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
/** A store on a database file of its own, in a temporary folder beside its crash images. */
function openStore(): { folder: string; path: string; store: SqliteStore } {
  const folder = temporaryFolder();
  const path = join(folder, 'switchboard.db');
  return { folder, path, store: createSqliteStore({ path }) };
}

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
function ingressOver(
  journal: Journal,
  options: { maxPendingPerSession?: number; outcomes?: OutcomeSink } = {},
) {
  const policy = PipelinePolicySchema.parse({ id: 'assistant' });
  const pool = createMemoryQueryPool({
    concurrency: { global: 1, perSession: 1 },
    limits: { maxPending: 100, maxPendingPerSession: options.maxPendingPerSession ?? 100 },
    pipelines: [policy],
    journal,
  });
  const ingress = createIngress({
    pool,
    router: () => createRouter({ default: 'assistant', rules: [] }, { pipelines: ['assistant'] }),
    outcomes: options.outcomes ?? createOutcomeBus(),
    channelPolicy: () => ({ admission: { require_mention: false, prefixes: [] }, sessionScope: 'chat' }),
  });
  return { ingress, pool };
}

/** A store whose one accepted message is claimed: its turn runs. */
async function runningTurn() {
  const opened = openStore();
  const { message } = queuedMessageFixture(1);
  const running = ingressOver(opened.store.journal);
  expect((await running.ingress.accept(message, 'update-1')).status).toBe('queued');
  const turn = await running.pool.claim();
  if (turn === null) throw new Error('the accepted message is not claimable');
  return { ...opened, message, turn };
}

describe('ingress over a SQLite journal', () => {
  describe('when the process dies before the group commit that journals a delivery', () => {
    it('accepts the redelivery after the restart instead of calling it a duplicate', async () => {
      const { folder, path, store } = openStore();
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
      const { folder, path, store } = openStore();
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

  describe("when the process dies between the commit storing a turn's answer and the one ending it", () => {
    it("follows the message without running it again, and the delivery's end forgets it", async () => {
      const { folder, path, store, message, turn } = await runningTurn();
      const answer = deliveryOf(turn, turn.messages, [{ text: 'first answer' }], {
        kind: 'answer',
        nowMs: 1,
      });
      expect(await store.outbox.add(answer)).toBe('added');
      // Killed before the turn completes: its journal removal is not issued yet.
      const image = crashImage(path, join(folder, 'crashed.db'));
      store.close();

      const restarted = createSqliteStore({ path: image });
      const { pool } = ingressOver(restarted.journal);
      expect(await pool.recover()).toMatchObject([{ message: { id: message.id }, answered: true }]);
      // Run again, the turn could end a second time (a failure, a merge with later messages)
      // while the stored answer is sent and ends it too.
      expect(await pool.claim()).toBeNull();
      const delivery = await restarted.outbox.claim(answer.channel, Number.MAX_SAFE_INTEGER);
      expect(delivery?.delivery.replies).toEqual([{ text: 'first answer' }]);
      expect(await restarted.outbox.delivered(delivery as NonNullable<typeof delivery>)).toBe('settled');
      expect(await restarted.journal.load()).toEqual([]);
      restarted.close();
    });
  });

  describe("when an operator's reply takes the id of a journaled message", () => {
    it('neither marks that message answered nor removes it when the reply is sent', async () => {
      const { folder, path, store, message, turn } = await runningTurn();
      // An operator's reply owns its outcome, names the id its operator chose, and ran no turn.
      const reply = {
        ...deliveryOf(turn, turn.messages, [{ text: 'from the desk' }], { kind: 'answer', nowMs: 1 }),
        id: `operator:${turn.session}:${message.id}`,
        turnId: null,
        operator: 'ops',
      };
      expect(await store.outbox.add(reply)).toBe('added');
      const claimed = await store.outbox.claim(reply.channel, Number.MAX_SAFE_INTEGER);
      expect(await store.outbox.delivered(claimed as NonNullable<typeof claimed>)).toBe('settled');
      const image = crashImage(path, join(folder, 'crashed.db'));
      store.close();

      const restarted = createSqliteStore({ path: image });
      const { pool } = ingressOver(restarted.journal);
      const recovered = await pool.recover();
      expect(recovered).toMatchObject([{ message: { id: message.id } }]);
      expect(recovered[0]?.answered).not.toBe(true);
      expect((await pool.claim())?.messages.map((queued) => queued.message.id)).toEqual([message.id]);
      restarted.close();
    });
  });

  describe('when the journal write fails after the delivery key was marked in it', () => {
    it('rethrows, and the redelivery is judged again rather than called a duplicate', async () => {
      const { path, store } = openStore();
      const { ingress, pool } = ingressOver(store.journal);
      const { message } = queuedMessageFixture(1);
      // The key is marked first in the write, then the entry insert fails: the write rolls back whole.
      const admin = new BetterSqlite3(path);
      admin.exec(
        `CREATE TRIGGER full_disk BEFORE INSERT ON journal BEGIN SELECT RAISE(ABORT, 'disk full'); END`,
      );
      await expect(ingress.accept(message, 'update-3')).rejects.toThrow('disk full');
      admin.exec('DROP TRIGGER full_disk');
      admin.close();

      expect((await ingress.accept(message, 'update-3')).status).toBe('queued');
      expect((await pool.stats()).pending).toBe(1);
      expect((await store.journal.load()).map((entry) => entry.message.id)).toEqual([message.id]);
      store.close();
    });
  });

  describe('when a message pushes the oldest out of a full session', () => {
    /** An outcome sink writing each outcome to `store`'s audit log in the same tick, as the gateway's recorder does. */
    function auditingSink(store: SqliteStore) {
      const writes: Promise<void>[] = [];
      const outcomes: Outcome[] = [];
      const sink: OutcomeSink = {
        record(outcome) {
          outcomes.push(outcome);
          const record = {
            outcome: outcome.kind,
            reason: outcome.reason ?? null,
            message_id: outcome.message.id,
          };
          writes.push(store.auditLog.append(auditRecordFixture(outcomes.length, record)));
        },
      };
      return { sink, outcomes, settled: () => Promise.all(writes) };
    }

    /** What a restart would find of `messageId` in the database at `path`: journaled, recorded dropped. */
    function traceOf(path: string, messageId: string) {
      const db = new BetterSqlite3(path, { readonly: true });
      try {
        return {
          journaled: db.prepare('SELECT 1 FROM journal WHERE id = ?').get(messageId) !== undefined,
          dropped:
            db.prepare("SELECT 1 FROM audit WHERE message_id = ? AND outcome = 'dropped'").get(messageId) !==
            undefined,
        };
      } finally {
        db.close();
      }
    }

    it('commits the removal of the dropped message with its dropped record, so a kill loses neither', async () => {
      const { folder, path, store } = openStore();
      const audit = auditingSink(store);
      const { ingress } = ingressOver(store.journal, { maxPendingPerSession: 1, outcomes: audit.sink });
      const [oldest, newest] = [queuedMessageFixture(1).message, queuedMessageFixture(2).message];
      expect((await ingress.accept(oldest, 'update-1')).status).toBe('queued');
      expect((await ingress.accept(newest, 'update-2')).status).toBe('queued');
      // Killed as the new message is acknowledged: the dropped one is still journaled, unrecorded.
      const killedAtAck = crashImage(path, join(folder, 'at-ack.db'));
      await audit.settled();
      const killedAfter = crashImage(path, join(folder, 'after.db'));
      store.close();

      expect(traceOf(killedAtAck, oldest.id)).toEqual({ journaled: true, dropped: false });
      expect(traceOf(killedAfter, oldest.id)).toEqual({ journaled: false, dropped: true });
    });

    it('queues the new message once, even when the removal of the dropped one fails', async () => {
      const { path, store } = openStore();
      const audit = auditingSink(store);
      const { ingress } = ingressOver(store.journal, { maxPendingPerSession: 1, outcomes: audit.sink });
      const [oldest, newest] = [queuedMessageFixture(1).message, queuedMessageFixture(2).message];
      expect((await ingress.accept(oldest, 'update-1')).status).toBe('queued');
      const admin = new BetterSqlite3(path);
      admin.exec(
        `CREATE TRIGGER keep_journal BEFORE DELETE ON journal BEGIN SELECT RAISE(ABORT, 'disk says no'); END`,
      );
      admin.close();

      expect((await ingress.accept(newest, 'update-2')).status).toBe('queued');
      await audit.settled();
      expect(audit.outcomes.map((outcome) => [outcome.message.id, outcome.kind, outcome.reason])).toEqual([
        [oldest.id, 'dropped', 'queue_overflow'],
      ]);
      // The removal failed: the dropped message may run again after a restart (at least once).
      expect((await store.journal.load()).map((entry) => entry.message.id)).toEqual([oldest.id, newest.id]);
      store.close();
    });
  });
});
