import { constants, existsSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { ProbeResult } from '@switchboard/core';
import { SCHEMA_VERSION, schemaVersion } from './migrations.js';
import { openDatabase } from './sqlite-store.js';

/** The nearest folder of `path` that exists: where a missing file and its folders would be created. */
function nearestFolder(path: string): string {
  let folder = dirname(path);
  while (!existsSync(folder) && dirname(folder) !== folder) folder = dirname(folder);
  return folder;
}

/** Whether this process may write in `path`. */
async function writable(path: string): Promise<boolean> {
  try {
    await access(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The read-only check of a SQLite file (`switchboard doctor`, `store.path` or `audit.path`): an
 * existing file opens read-only and has a schema this build reads, and it and its folder (where
 * SQLite keeps its `-wal` and `-shm` files) are writable; a missing file's nearest folder is
 * writable, so a start can create it. Creates nothing.
 */
export async function probeSqliteFile(path: string, configPath: string): Promise<ProbeResult> {
  const file = resolve(path);
  if (!existsSync(file)) {
    const folder = nearestFolder(file);
    return (await writable(folder))
      ? { level: 'ok', detail: `${file} is created at start (${folder} is writable)` }
      : {
          level: 'fail',
          detail: `${file} cannot be created: ${folder} is not writable`,
          hint: `let the gateway's user write in ${folder}, or set ${configPath} elsewhere`,
        };
  }
  for (const needed of [file, dirname(file)]) {
    if (!(await writable(needed))) {
      return {
        level: 'fail',
        detail: `${needed} is not writable`,
        hint: `let the gateway's user write ${needed}, or set ${configPath} elsewhere`,
      };
    }
  }
  let version: number;
  try {
    const db = openDatabase(file, 1000, true);
    try {
      version = schemaVersion(db);
    } finally {
      db.close();
    }
  } catch (error) {
    return {
      level: 'fail',
      detail: `${file} does not open: ${error instanceof Error ? error.message : String(error)}`,
      hint: `check that ${configPath} names a Switchboard SQLite file`,
    };
  }
  if (version > SCHEMA_VERSION) {
    return {
      level: 'fail',
      detail: `${file} has schema version ${version}, this build reads version ${SCHEMA_VERSION}`,
      hint: 'upgrade Switchboard',
    };
  }
  return { level: 'ok', detail: `${file} opens (schema version ${version})` };
}
