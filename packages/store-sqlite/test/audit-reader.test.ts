import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditRecordFixture } from '@switchboard/contracts';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore, openAuditReader } from '../src/index.js';

describe('openAuditReader', () => {
  let folder: string;
  let path: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'switchboard-audit-reader-'));
    path = join(folder, 'switchboard.db');
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  describe('when the server is writing the same file', () => {
    it('sees records the writer commits after the reader opened', async () => {
      const server = createSqliteStore({ path });
      await server.auditLog.append(auditRecordFixture(1));
      const reader = openAuditReader({ path });
      expect((await reader.auditLog.query({ limit: 10 })).items).toEqual([auditRecordFixture(1)]);
      await server.auditLog.append(auditRecordFixture(2, { outcome: 'dropped', reason: 'shutdown' }));
      const { items } = await reader.auditLog.query({ limit: 10, outcome: 'dropped' });
      expect(items.map((item) => item.id)).toEqual([auditRecordFixture(2).id]);
      reader.close();
      server.close();
    });

    it('does not block the writer', async () => {
      const server = createSqliteStore({ path, busyTimeoutMs: 0 });
      const reader = openAuditReader({ path });
      await reader.auditLog.query({ limit: 10 });
      await server.auditLog.append(auditRecordFixture(1));
      expect(await server.auditLog.prune(Number.MAX_SAFE_INTEGER)).toBe(1);
      reader.close();
      server.close();
    });
  });

  describe('when the server has stopped', () => {
    it('reads what it left', async () => {
      const server = createSqliteStore({ path });
      await server.auditLog.append(auditRecordFixture(1));
      server.close();
      const reader = openAuditReader({ path });
      expect((await reader.auditLog.query({ limit: 10 })).items).toEqual([auditRecordFixture(1)]);
      reader.close();
    });
  });

  describe('when there is no store to read', () => {
    it('refuses a missing file with SB_STORE_UNAVAILABLE instead of creating one', () => {
      expect(() => openAuditReader({ path })).toThrow(
        expect.objectContaining({ code: 'SB_STORE_UNAVAILABLE' }),
      );
    });

    it('refuses a file without the store schema', () => {
      new BetterSqlite3(path).close();
      expect(() => openAuditReader({ path })).toThrow(
        expect.objectContaining({
          code: 'SB_STORE_UNAVAILABLE',
          message: expect.stringContaining('schema version 0'),
        }),
      );
    });
  });
});
