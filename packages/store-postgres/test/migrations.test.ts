import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/index.js';
import { postgresReachable, queryPostgres, useSchema } from './postgres-harness.js';

const reachable = await postgresReachable();

describe('loadMigrations', () => {
  it('numbers the files of migrations/ from 1 without gaps, in order', async () => {
    const migrations = await loadMigrations();
    expect(migrations[0]?.name).toBe('0001_init.sql');
    expect(migrations.map((migration) => migration.version)).toEqual(migrations.map((_, index) => index + 1));
  });
});

describe.skipIf(!reachable)('migrations', () => {
  const schema = useSchema();

  const recorded = () =>
    queryPostgres<{ version: number }>(
      `SELECT version FROM ${schema.name}.schema_migrations ORDER BY version`,
    ).then((rows) => rows.map((row) => row.version));

  describe('when two stores open the same new schema at the same moment', () => {
    it('migrates it once and both work', async () => {
      const versions = (await loadMigrations()).map((migration) => migration.version);
      const [a, b] = await Promise.all([schema.open(), schema.open()]);
      expect(await recorded()).toEqual(versions);
      await a.auditLog.prune(0);
      await b.history.recent('s', 'p', 1);
    });
  });

  describe('when the schema is up to date', () => {
    it('applies nothing on the next open', async () => {
      await schema.open();
      const appliedAt = () =>
        queryPostgres<{ applied_at: Date }>(
          `SELECT applied_at FROM ${schema.name}.schema_migrations ORDER BY version`,
        );
      const first = await appliedAt();
      await schema.open();
      expect(await appliedAt()).toEqual(first);
    });
  });

  describe('when a newer build migrated the schema', () => {
    it('refuses to open it with SB_STORE_FORMAT_UNSUPPORTED naming the schema and both versions, changing nothing', async () => {
      await schema.open();
      const newer = (await loadMigrations()).length + 1;
      await queryPostgres(
        `INSERT INTO ${schema.name}.schema_migrations (version, name) VALUES ($1, 'future')`,
        [newer],
      );
      await expect(schema.open()).rejects.toMatchObject({
        code: 'SB_STORE_FORMAT_UNSUPPORTED',
        message: `PostgreSQL schema ${schema.name} has version ${newer}, this build reads version ${newer - 1}; upgrade Switchboard`,
        details: { store: 'postgres', schema: schema.name, found: newer, reads: newer - 1 },
      });
      expect(await recorded()).toEqual([...(await loadMigrations()).map((m) => m.version), newer]);
    });
  });
});
