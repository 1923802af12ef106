import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ReplyOutbox,
  SwitchboardError,
  createOutcomeBus,
  createReplySender,
  silentLogger,
} from '@switchboard/core';
import { deliveryFixture } from '@switchboard/contracts';
import { type SqliteStore, createSqliteStore } from '@switchboard/store-sqlite';
import { eventually } from '@switchboard/testkit/eventually';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createAuditRecorder } from '../src/audit-recorder.js';
import { useCleanups } from './serve-process.js';

const cleanup = useCleanups();

/** A delivery the outbox gives up at once: its channel refuses it for good. */
const delivery = deliveryFixture(1, { createdAt: Date.now(), notBefore: 0 });
const refusingChannel = {
  id: delivery.channel,
  send: async () => {
    throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', { message: 'HTTP 400', retryable: false });
  },
};

/**
 * One gateway process on the SQLite file, as `store: sqlite` wires it: the reply sender on the
 * file's outbox, the audit recorder on its audit log, subscribed as storing so that a delivery's
 * audit record joins the group commit of its removal. `tries` counts the removals written.
 */
function gatewayOn(store: SqliteStore) {
  const tries = { removals: 0 };
  const outbox: ReplyOutbox = {
    ...store.outbox,
    failed: (claim, ended) => {
      tries.removals += 1;
      return store.outbox.failed(claim, ended);
    },
    // The running sender's removal, which claims the next delivery with it.
    endAndClaim: (claim, nowMs, ended) => {
      tries.removals += 1;
      return store.outbox.endAndClaim(claim, nowMs, ended);
    },
  };
  const outcomes = createOutcomeBus();
  const audit = createAuditRecorder({
    auditLog: store.auditLog,
    config: { kind: 'sqlite', retentionDays: 30, storeText: 'full', recordIgnored: false },
    logger: silentLogger,
  });
  outcomes.subscribe(audit.record, { stores: true });
  const sender = createReplySender({
    outbox,
    channel: () => refusingChannel,
    policy: () => ({
      sendTimeoutMs: 5000,
      concurrency: 1,
      maxAgeMs: 60_000,
      retry: { baseDelayMs: 1000, maxDelayMs: 1000 },
    }),
    outcomes,
  });
  sender.start();
  return { sender, tries };
}

describe('a dead-lettered delivery on one SQLite file', () => {
  describe('when its group commit is rerun write by write and only the removal fails', () => {
    it('keeps one audit record: through the removal written again, and after a restart sends it again', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-records-'));
      cleanup(async () => rmSync(folder, { recursive: true, force: true }));
      const path = join(folder, 'switchboard.db');
      const auditRecords = (store: SqliteStore) =>
        store.auditLog
          .query({ message: delivery.messages[0]?.message.id, limit: 10 })
          .then((page) => page.items);

      const first = createSqliteStore({ path });
      await first.outbox.add({ ...delivery, messages: delivery.messages.slice(0, 1) });
      // Another connection makes every removal of the outbox fail, as a full disk would: the
      // batch (removal + audit record) rolls back and is rerun one write at a time.
      const other = new BetterSqlite3(path);
      cleanup(async () => other.close());
      other.exec(
        "CREATE TRIGGER outbox_full BEFORE DELETE ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
      );
      const running = gatewayOn(first);
      // The removal written a second time records the outcome again, in the same process.
      await eventually(() => running.tries.removals >= 2, 10_000, 'the removal written again');
      expect(await auditRecords(first)).toHaveLength(1);
      // The process dies with the delivery still stored beside its audit record.
      await running.sender.stop({ drainTimeoutMs: 0 });
      first.close();

      other.exec('DROP TRIGGER outbox_full');
      const second = createSqliteStore({ path });
      cleanup(async () => second.close());
      const restarted = gatewayOn(second);
      cleanup(() => restarted.sender.stop({ drainTimeoutMs: 0 }));
      await eventually(
        async () => Object.keys(await second.outbox.pending()).length === 0,
        10_000,
        'the removal',
      );
      expect(restarted.tries.removals).toBe(1);
      expect(await auditRecords(second)).toEqual([
        expect.objectContaining({ outcome: 'dead_lettered', reason: 'delivery_failed' }),
      ]);
    });
  });
});
