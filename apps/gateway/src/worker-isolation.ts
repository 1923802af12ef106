import { type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Config } from '@switchboard/config';
import { SwitchboardError } from '@switchboard/core';
import {
  type Access,
  accessAs,
  gatewayPrivileges,
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
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/** The folders above `path`, nearest first, up to `/`. */
function foldersAbove(path: string): string[] {
  const folders: string[] = [];
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    folders.push(folder);
    if (folder === dirname(folder)) return folders;
  }
}

/** A path the workers must neither read nor write, and the mode that keeps them out. */
interface Guarded {
  what: string;
  path: string;
  fix: string;
}

/**
 * What a worker could do to a guarded path or the folder it sits in, worded for the operator, or
 * nothing. A file (or the data folder) must be neither readable nor writable by it; a folder above
 * must not let it replace the entry below — write and search on the folder do, unless the folder
 * is sticky (as /tmp) and neither it nor the entry is the worker's. An entry the worker owns is
 * refused whatever its mode: it could change the mode.
 */
function exposure(
  access: Access,
  stats: Stats,
  identity: WorkerIdentity,
  below: { path: string; stats: Stats | null } | undefined,
): string | undefined {
  if (stats.uid === identity.uid) return 'own';
  if (below === undefined) {
    const can = [access.read && 'read', access.write && 'write'].filter(Boolean);
    return can.length === 0 ? undefined : can.join(' and ');
  }
  if (!access.write) return undefined;
  const sticky = (stats.mode & 0o1000) !== 0;
  if (sticky && below.stats !== null && below.stats.uid !== identity.uid) return undefined;
  return `replace ${below.path} in`;
}

/**
 * The workers of every `process` pipeline with `run_as`, by pipeline id, once it is certain they
 * can reach none of the gateway's secrets nor change what it loads. Throws
 * SB_PIPELINE_RUN_AS_INVALID listing every problem at once:
 * - a `process` pipeline without `run_as` while the gateway is root or holds CAP_SETUID;
 * - a `run_as` that cannot be applied (`pipelines[i].run_as.user: …`);
 * - `admin.token` unset, or an `openapi` channel without `api_keys`: loopback callers, the workers
 *   among them, would need no credential;
 * - the configuration file, a secret file, the SQLite data folder or database files the workers
 *   could read or write, or a folder above any of them where they could replace an entry (rename
 *   a file of theirs into place). Access is tried as each worker identity (ACLs count).
 * Run at start, before the stores open: a refused start writes nothing. Modes are reported, never
 * changed: those files are the operator's to set (the folder and database the gateway creates
 * itself are 0700 and 0600 already).
 */
export function isolateWorkers(config: Config, files: GatewayFiles): Map<string, WorkerIdentity> {
  const identities = new Map<string, WorkerIdentity>();
  const problems: string[] = [];
  const processPipelines = config.pipelines.flatMap((entry, index) =>
    entry.type === 'process' ? [{ id: entry.id, index, runAs: entry.options.run_as }] : [],
  );
  if (processPipelines.length === 0) return identities;
  const privileges = gatewayPrivileges();
  // A worker of a root gateway would be root: every secret, and the gateway's own files to rewrite.
  if (privileges.uid === 0 || privileges.capabilities.has('CAP_SETUID'))
    for (const { index, runAs } of processPipelines)
      if (runAs === undefined)
        problems.push(
          `pipelines[${index}].run_as: required when the gateway runs as root (uid ${privileges.uid}) or holds CAP_SETUID: its workers would run with the gateway's privileges; name an unprivileged user for them, or start the gateway as one`,
        );
  const entries = processPipelines.flatMap(({ id, index, runAs }) =>
    runAs === undefined ? [] : [{ id, index, runAs }],
  );
  if (entries.length === 0) {
    if (problems.length > 0) throw refusal(problems);
    return identities;
  }

  if (config.admin.token === undefined)
    problems.push(
      'admin.token: required with run_as: without it loopback callers, the workers among them, may use the admin API',
    );
  config.channels.forEach((channel, index) => {
    if (channel.type === 'openapi' && channel.apiKeys.length === 0)
      problems.push(
        `channels[${index}].api_keys: required with run_as: without them loopback callers, the workers among them, may send messages as anyone`,
      );
  });

  const accounts = readAccounts();
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

  const guarded: Guarded[] = [
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
  // Each guarded path, then each folder above one, with the entry below it on the way there.
  const checked = new Map<string, { guarded?: Guarded; below?: string }>();
  for (const entry of guarded) checked.set(entry.path, { guarded: entry });
  for (const { path } of guarded) {
    let below = path;
    for (const folder of foldersAbove(path)) {
      if (!checked.has(folder)) checked.set(folder, { below });
      below = folder;
    }
  }
  const paths = [...checked.keys()];
  const stats = new Map(paths.map((path) => [path, statOrNull(path)]));

  for (const { identity, pipelines } of workersOf.values()) {
    let access: Access[];
    try {
      access = accessAs(identity, paths);
    } catch (error) {
      problems.push(`${pipelines.map((path) => `${path}.run_as`).join(', ')}: ${(error as Error).message}`);
      continue;
    }
    paths.forEach((path, index) => {
      const pathStats = stats.get(path);
      if (pathStats == null) return;
      const { guarded: entry, below } = checked.get(path)!;
      const can = exposure(
        access[index]!,
        pathStats,
        identity,
        below === undefined ? undefined : { path: below, stats: stats.get(below) ?? null },
      );
      if (can === undefined) return;
      problems.push(
        `${entry?.what ?? 'folder'} ${path}: mode ${octal(pathStats.mode)} (uid ${pathStats.uid}, gid ${pathStats.gid}) lets the workers of ${pipelines.join(', ')} (uid ${identity.uid}, gid ${identity.gid}) ${can} it: ${entry?.fix ?? 'chmod go-w'} it (and \`setfacl -b\` it if \`ls -l\` shows a +), owned by the gateway's user`,
      );
    });
  }
  if (problems.length > 0) throw refusal(problems);
  return identities;
}

function refusal(problems: string[]): SwitchboardError {
  return new SwitchboardError('SB_PIPELINE_RUN_AS_INVALID', {
    message: `workers cannot be isolated from the gateway\n  ${problems.join('\n  ')}`,
    details: { problems },
  });
}
