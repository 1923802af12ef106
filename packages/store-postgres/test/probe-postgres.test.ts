import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/migrations.js';
import { probePostgresStore } from '../src/probe-postgres.js';
import {
  POSTGRES_URL,
  closedPostgresUrl,
  postgresReachable,
  queryPostgres,
  randomSchemaName,
  useSchema,
} from './postgres-harness.js';

const reachable = await postgresReachable();
const TIMEOUT_MS = 2000;

describe.skipIf(!reachable)('probePostgresStore', () => {
  const schema = useSchema();

  describe('when the schema does not exist yet', () => {
    it('passes, and leaves no schema behind', async () => {
      const name = randomSchemaName();
      const result = await probePostgresStore({ url: POSTGRES_URL, schema: name, timeoutMs: TIMEOUT_MS });
      expect(result).toMatchObject({
        level: 'ok',
        detail: expect.stringContaining('to be created at start'),
      });
      expect(await queryPostgres('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name])).toEqual([]);
    });
  });

  describe('when the schema is at the version this build reads', () => {
    it('passes naming the version, and leaves no table behind', async () => {
      await schema.open();
      const version = (await loadMigrations()).length;
      const result = await probePostgresStore({
        url: POSTGRES_URL,
        schema: schema.name,
        timeoutMs: TIMEOUT_MS,
      });
      expect(result).toMatchObject({ level: 'ok', detail: expect.stringContaining(`(version ${version})`) });
      const probeTable = await queryPostgres('SELECT to_regclass($1) AS name', [
        `${schema.name}.doctor_probe`,
      ]);
      expect(probeTable).toEqual([{ name: null }]);
    });
  });

  describe('when the schema is newer than this build reads', () => {
    it('fails as a start would', async () => {
      await schema.open();
      await queryPostgres(
        `INSERT INTO ${schema.name}.schema_migrations (version, name) VALUES (999, 'future')`,
      );
      const result = await probePostgresStore({
        url: POSTGRES_URL,
        schema: schema.name,
        timeoutMs: TIMEOUT_MS,
      });
      expect(result).toMatchObject({ level: 'fail', detail: expect.stringContaining('has version 999') });
    });
  });

  describe('when PostgreSQL is unreachable', () => {
    it('fails naming the address, not the password', async () => {
      const url = new URL(await closedPostgresUrl());
      url.password = 'probe-password-secret';
      const result = await probePostgresStore({
        url: url.href,
        schema: 'switchboard',
        timeoutMs: TIMEOUT_MS,
      });
      expect(result).toMatchObject({ level: 'fail', detail: expect.stringMatching(/^unreachable: /) });
      expect(JSON.stringify(result)).not.toContain('probe-password-secret');
    });
  });
});
