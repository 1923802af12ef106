import { type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Config } from '@switchboard/config';
import { SwitchboardError } from '@switchboard/core';
import {
  gatewayPrivileges,
  reachableBy,
  readAccounts,
  resolveWorkerIdentity,
  type WorkerIdentity,
} from '@switchboard/pipelines';

/** What the gateway keeps from workers besides its environment: the files it reads and writes. */
export interface GatewayFiles {
  /** The configuration file, when the config came from one. */
  configPath: string | undefined;
  /** The files `${file:…}` and `NAME_FILE` references were read from. */
  secretFiles: readonly string[];
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/** The SQLite files the gateway writes (a missing folder is created 0700 by the store). */
function databasePaths(config: Config): string[] {
  if (config.store.kind !== 'sqlite') return [];
  const paths = new Set([config.store.path]);
  if (config.audit.kind === 'sqlite' && config.audit.path !== undefined) paths.add(config.audit.path);
  return [...paths].filter((path) => path !== ':memory:').map((path) => resolve(path));
}

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0');
}

/**
 * The workers of every `process` pipeline with `run_as`, by pipeline id, once it is certain they
 * can reach none of the gateway's secrets. Throws SB_PIPELINE_RUN_AS_INVALID listing every problem
 * at once — a `run_as` that cannot be applied (`pipelines[i].run_as.user: …`), or a file the
 * workers could read: the configuration file, a secret file, the folder of the SQLite database
 * or the database files themselves. Run at start, before the stores open: a refused start writes
 * nothing. Modes are reported, never changed: those files are the operator's to set (the
 * folder and database the gateway creates itself are 0700 and 0600 already).
 */
export function isolateWorkers(config: Config, files: GatewayFiles): Map<string, WorkerIdentity> {
  const identities = new Map<string, WorkerIdentity>();
  const problems: string[] = [];
  const entries = config.pipelines.flatMap((entry, index) =>
    entry.type === 'process' && entry.options.run_as !== undefined
      ? [{ id: entry.id, index, runAs: entry.options.run_as }]
      : [],
  );
  if (entries.length === 0) return identities;

  const accounts = readAccounts();
  const privileges = gatewayPrivileges();
  const workersOf = new Map<string, { identity: WorkerIdentity; pipelines: string[] }>();
  for (const { id, index, runAs } of entries) {
    const resolved = resolveWorkerIdentity(runAs, accounts, privileges);
    const path = `pipelines[${index}].run_as`;
    for (const { key, message } of resolved.problems)
      problems.push(`${key === undefined ? path : `${path}.${key}`}: ${message}`);
    if (resolved.identity === undefined) continue;
    identities.set(id, resolved.identity);
    const { uid, gid } = resolved.identity;
    const group = workersOf.get(`${uid}:${gid}`) ?? { identity: resolved.identity, pipelines: [] };
    group.pipelines.push(`pipelines[${index}]`);
    workersOf.set(`${uid}:${gid}`, group);
  }

  const checked: Array<{ what: string; path: string; fix: string }> = [
    ...(files.configPath === undefined
      ? []
      : [{ what: 'configuration file', path: resolve(files.configPath), fix: 'chmod 600' }]),
    ...files.secretFiles.map((path) => ({ what: 'secret file', path: resolve(path), fix: 'chmod 600' })),
    ...databasePaths(config).flatMap((path) => [
      { what: 'database folder', path: dirname(path), fix: 'chmod 700' },
      ...['', '-wal', '-shm'].map((suffix) => ({
        what: 'database file',
        path: `${path}${suffix}`,
        fix: 'chmod 600',
      })),
    ]),
  ];
  for (const { identity, pipelines } of workersOf.values()) {
    for (const { what, path, fix } of checked) {
      const stats = statOrNull(path);
      if (stats === null || !reachableBy(stats, identity)) continue;
      const owned = stats.uid === identity.uid ? ', theirs' : '';
      problems.push(
        `${what} ${path}: mode ${octal(stats.mode)} (uid ${stats.uid}${owned}, gid ${stats.gid}) lets the workers of ${pipelines.join(', ')} (uid ${identity.uid}, gid ${identity.gid}) read it: ${fix} it, owned by the gateway's user (or with a group they are not in)`,
      );
    }
  }
  if (problems.length > 0)
    throw new SwitchboardError('SB_PIPELINE_RUN_AS_INVALID', {
      message: `workers cannot be isolated from the gateway\n  ${problems.join('\n  ')}`,
      details: { problems },
    });
  return identities;
}
