import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, createSqliteStore } from '../src/index.js';
import { probeSqliteFile } from '../src/probe-sqlite.js';

const folder = () => mkdtempSync(join(tmpdir(), 'switchboard-probe-'));

describe('probeSqliteFile', () => {
  describe('when the file does not exist yet', () => {
    it('passes when its folder can be created, and creates nothing', async () => {
      const path = join(folder(), 'data', 'switchboard.db');
      expect(await probeSqliteFile(path, 'store.path')).toMatchObject({ level: 'ok' });
      expect(existsSync(join(path, '..'))).toBe(false);
    });
  });

  describe('when the file is a store', () => {
    it('passes naming its schema version', async () => {
      const path = join(folder(), 'switchboard.db');
      createSqliteStore({ path }).close();
      expect(await probeSqliteFile(path, 'store.path')).toEqual({
        level: 'ok',
        detail: `${path} opens (schema version ${SCHEMA_VERSION})`,
      });
    });
  });

  describe('when the file is not a database', () => {
    it('fails naming the config key', async () => {
      const path = join(folder(), 'notes.txt');
      writeFileSync(path, 'not a database, but long enough to be read as a header of one\n'.repeat(20));
      expect(await probeSqliteFile(path, 'audit.path')).toMatchObject({
        level: 'fail',
        detail: expect.stringContaining('does not open'),
        hint: expect.stringContaining('audit.path'),
      });
    });
  });

  describe.skipIf(process.getuid?.() === 0)('when the folder is not writable', () => {
    it('fails naming the folder', async () => {
      const dir = folder();
      chmodSync(dir, 0o500);
      const result = await probeSqliteFile(join(dir, 'switchboard.db'), 'store.path');
      expect(result).toMatchObject({
        level: 'fail',
        detail: `${join(dir, 'switchboard.db')} cannot be created: ${dir} is not writable`,
      });
    });
  });
});
