import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Logger,
  type Outcome,
  createOutcomeBus,
  createReplySender,
  silentLogger,
} from '@switchboard/core';
import { deliveryFixture } from '@switchboard/core/testing';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('sqlite reply outbox with the reply sender', () => {
  describe('when the commit that removes a delivered delivery fails', () => {
    it('records no outcome and sends nothing again, writes the removal again, and records the outcome once it commits', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'switchboard-outbox-'));
      folders.push(folder);
      const path = join(folder, 'switchboard.db');
      const store = createSqliteStore({ path });
      // Another connection to the file makes the removal fail, as a full disk or an I/O error would.
      const other = new BetterSqlite3(path);
      other.exec(
        "CREATE TRIGGER outbox_full BEFORE DELETE ON outbox BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
      );
      const outcomes: Outcome[] = [];
      let outcomeRecorded: () => void = () => {};
      const recorded = new Promise<void>((resolve) => {
        outcomeRecorded = resolve;
      });
      const bus = createOutcomeBus();
      bus.subscribe((outcome) => {
        outcomes.push(outcome);
        outcomeRecorded();
      });
      let commitFailed: () => void = () => {};
      const failedOnce = new Promise<void>((resolve) => {
        commitFailed = resolve;
      });
      const logger: Logger = {
        ...silentLogger,
        error: (_bindings, message) => {
          if (message.startsWith('settlement failed to commit')) commitFailed();
        },
        child: () => logger,
      };
      let sends = 0;
      const channel = {
        id: 'tg',
        send: async () => {
          sends += 1;
        },
      };
      const delivery = deliveryFixture(1, { channel: 'tg', createdAt: Date.now(), notBefore: 0 });
      await store.outbox.add({ ...delivery, messages: delivery.messages.slice(0, 1) });
      const sender = createReplySender({
        outbox: store.outbox,
        channel: () => channel,
        policy: () => ({
          sendTimeoutMs: 5_000,
          concurrency: 1,
          maxAgeMs: 60_000,
          retry: { baseDelayMs: 1_000, maxDelayMs: 1_000 },
        }),
        outcomes: bus,
        logger,
      });
      try {
        sender.start();
        await failedOnce;
        // The removal rolled back: the message is not over, nobody was told it was, and the
        // delivery, sent once, is not handed out to be sent again.
        expect(outcomes).toHaveLength(0);
        expect(await store.outbox.pending()).toEqual({ tg: 1 });
        expect(await store.outbox.claim('tg', Date.now())).toBeNull();

        other.exec('DROP TRIGGER outbox_full');
        await recorded;
        await sender.stop({ drainTimeoutMs: 1_000 });
        expect(outcomes).toEqual([expect.objectContaining({ kind: 'completed' })]);
        expect(await store.outbox.pending()).toEqual({});
        expect(sends).toBe(1);
      } finally {
        await sender.stop({ drainTimeoutMs: 0 });
        other.close();
        store.close();
      }
    });
  });
});
