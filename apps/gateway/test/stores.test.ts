import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigSchema } from '@switchboard/config';
import { silentLogger } from '@switchboard/core';
import { auditRecordFixture } from '@switchboard/contracts';
import {
  POSTGRES_URL,
  dropSchema,
  postgresReachable,
  queryPostgres,
  randomSchemaName,
} from '@switchboard/testkit/postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { openStores } from '../src/stores.js';

const reachable = await postgresReachable();
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A schema of the test's own, dropped after it. */
function schemaOfTest(): string {
  const schema = randomSchemaName();
  cleanups.push(() => dropSchema(schema));
  return schema;
}

/** A folder removed after the test. */
function folderOfTest(): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-stores-'));
  cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

describe.skipIf(!reachable)('openStores', () => {
  describe.each([
    ['memory', () => ({ kind: 'memory' as const })],
    ['sqlite', () => ({ kind: 'sqlite' as const, path: join(folderOfTest(), 'data.db') })],
  ])('when audit is postgres and the store is %s', (_, storeOf) => {
    it('keeps the audit log in the schema of audit.schema, answers ready, and its pool works', async () => {
      const schema = schemaOfTest();
      const config = ConfigSchema.parse({
        store: storeOf(),
        audit: { kind: 'postgres', url: POSTGRES_URL, schema },
      });
      const stores = await openStores(config, silentLogger);
      cleanups.push(() => stores.close());
      await stores.auditLog.append(auditRecordFixture(1));
      const rows = await queryPostgres<{ id: string }>(`SELECT id FROM ${schema}.audit`);
      expect(rows.map((row) => row.id)).toEqual([auditRecordFixture(1).id]);
      expect(await stores.health()).toEqual({ ok: true });
      const pool = await stores.createPool({
        concurrency: config.concurrency,
        limits: config.queue,
        pipelines: config.pipelines.map((pipeline) => pipeline.policy),
        logger: silentLogger,
      });
      expect(await pool.stats()).toMatchObject({ pending: 0 });
    });
  });
});

describe('openStores', () => {
  describe('when the store is sqlite', () => {
    it('writes the records through the outbox commit only when the audit is in the same file', async () => {
      const folder = folderOfTest();
      const opened = async (audit: object) => {
        const stores = await openStores(
          ConfigSchema.parse({ store: { kind: 'sqlite', path: join(folder, 'data.db') }, audit }),
          silentLogger,
        );
        cleanups.push(() => stores.close());
        return stores.recordsShareOutboxCommit;
      };
      expect(await opened({ kind: 'sqlite' })).toBe(true);
      expect(await opened({ kind: 'sqlite', path: join(folder, 'audit.db') })).toBe(false);
    });
  });

  describe('when the store is memory', () => {
    it('has no commit for the records to share', async () => {
      const stores = await openStores(ConfigSchema.parse({ store: { kind: 'memory' } }), silentLogger);
      cleanups.push(() => stores.close());
      expect(stores.recordsShareOutboxCommit ?? false).toBe(false);
    });
  });
});
