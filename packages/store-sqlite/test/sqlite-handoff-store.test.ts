import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InboundMessage } from '@switchboard/core';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore, type SqliteStore } from '../src/index.js';

const SESSION = 'telegram:tg:person:42';
const OTHER = 'telegram:tg:person:43';
const HOLD = { at: 1100, maxEntries: 100 };
const start = (at: number) => ({ reason: 'asked for a human', by: 'rule:human', at });

function message(id: string): InboundMessage {
  return {
    id,
    platform: 'telegram',
    channel: 'tg',
    chat: { type: 'person', id: '42' },
    sender: { id: '42', is_bot: false },
    elements: [{ type: 'text', text: id }],
    text: id,
    mentions_bot: false,
    platform_message_id: id,
    received_at: 1,
  };
}

const folders: string[] = [];
const stores: SqliteStore[] = [];

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function openStore(): { store: SqliteStore; path: string } {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-handoff-'));
  folders.push(folder);
  const path = join(folder, 'switchboard.db');
  const store = createSqliteStore({ path });
  stores.push(store);
  return { store, path };
}

describe('sqlite handoff store', () => {
  describe('when a session is not in handoff', () => {
    it('answers hold without reading the file, which a session in handoff needs', async () => {
      const { store } = openStore();
      await store.handoffs.begin(SESSION, start(1000));
      stores.splice(stores.indexOf(store), 1);
      store.close();
      expect(await store.handoffs.hold(OTHER, [message('m1')], HOLD)).toBe('not_in_handoff');
      await expect(store.handoffs.hold(SESSION, [message('m1')], HOLD)).rejects.toThrow(/not open/);
    });
  });

  describe('when an end and a begin of the session are written in one commit', () => {
    it('leaves the new handoff in force', async () => {
      const { store } = openStore();
      await store.handoffs.begin(SESSION, start(1000));
      const [ended, begun] = await Promise.all([
        store.handoffs.end(SESSION),
        store.handoffs.begin(SESSION, start(2000)),
      ]);
      expect(ended?.handoff.startedAt).toBe(1000);
      expect(begun.created).toBe(true);
      expect(await store.handoffs.hold(SESSION, [message('m1')], HOLD)).toBe('held');
      expect(await store.handoffs.get(SESSION)).toMatchObject({ startedAt: 2000, held: 1 });
    });
  });

  describe('when an end fails to commit', () => {
    it('keeps the session in handoff, holding its messages', async () => {
      const { store, path } = openStore();
      await store.handoffs.begin(SESSION, start(1000));
      // Another connection makes the removal fail, as a full disk or an I/O error would.
      const other = new BetterSqlite3(path);
      other.exec(
        "CREATE TRIGGER handoff_full BEFORE DELETE ON handoff BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
      );
      other.close();
      await expect(store.handoffs.end(SESSION)).rejects.toThrow(/disk is full/);
      expect(await store.handoffs.hold(SESSION, [message('m1')], HOLD)).toBe('held');
      expect(await store.handoffs.count()).toBe(1);
    });
  });
});
