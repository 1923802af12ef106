import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { type Config, type LoadedFile, loadConfig } from '@switchboard/config';
import type { Logger } from '@switchboard/core';
import type { ConfigReport, FleetConfig } from '@switchboard/store-redis';
import type { LiveConfig } from './live-config.js';

/** What a replica shares with the fleet about configurations (the Redis pool). */
export interface FleetConfigStore {
  publishConfig(digest: string): Promise<number>;
  fleetConfig(): Promise<FleetConfig | null>;
  reportConfig(report: ConfigReport): Promise<void>;
}

/**
 * The digest of what a reload can change: replicas whose files give the same one run the same
 * configuration. Secrets count (a rotated token is a change); only their hash leaves the process.
 */
export function configDigest(config: Config): string {
  let digest = digests.get(config);
  if (digest === undefined) {
    const { channels, pipelines, routing, tenants, concurrency, queue } = config;
    digest = createHash('sha256')
      .update(JSON.stringify({ channels, pipelines, routing, tenants, concurrency, queue }))
      .digest('hex');
    digests.set(config, digest);
  }
  return digest;
}

/**
 * A file modified this recently may be modified again within the same timestamp tick, unseen by
 * its stats (git's "racy" files): what was read then is not kept.
 */
const RACY_MS = 2_000;

/**
 * The identity, size and times of each of `paths` (`-` for one missing), as one string; '' when
 * one was modified within RACY_MS of `nowMs`, which matches no later stats.
 */
async function statsOf(paths: readonly string[], nowMs: number): Promise<string> {
  const stats = await Promise.all(paths.map((path) => stat(path).catch(() => undefined)));
  if (stats.some((found) => found !== undefined && nowMs - found.mtimeMs < RACY_MS)) return '';
  return stats
    .map((found) =>
      found === undefined ? '-' : `${found.ino}:${found.size}@${found.mtimeMs}/${found.ctimeMs}`,
    )
    .join(',');
}

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, index) => item === b[index]);

/** Each configuration's digest, computed once: every check compares the one in force. */
const digests = new WeakMap<Config, string>();

/** A replica's side of the fleet's configuration version (docs/design.md §5 "Reload"). */
export interface FleetFollower {
  /** Adopts the fleet's version if this replica's file matches it, else publishes none and says it differs. */
  start(): Promise<void>;
  /**
   * A reload here succeeded: its configuration becomes the fleet's, one version up, unless the
   * fleet runs it already.
   */
  published(): Promise<void>;
  /**
   * Reloads this replica's file if the fleet runs a newer version with the same digest; else
   * reports that it differs and keeps the configuration in force.
   */
  check(): Promise<void>;
  /**
   * What the pool calls when a renewal finds the stored limits differ from this replica's: the
   * file is read again even if the fleet's version did not move (a replica that stored new
   * limits and died before publishing them); a file that differs from the configuration in
   * force is reloaded and published.
   */
  reconcile(): Promise<void>;
  stop(): void;
}

/**
 * Follows the fleet's configuration: every `everyMs` (the pool's renewal period) it reads the
 * fleet's version and reloads its own file when a reload elsewhere made a newer one; the report
 * each replica leaves shows in `/admin/queues`. A file that differs from the fleet's is reported
 * and not applied: the last configuration that matched stays.
 */
export function followFleetConfig(options: {
  store: FleetConfigStore;
  live: LiveConfig;
  configPath: string | undefined;
  everyMs: number;
  logger: Logger;
  /** Reads the file; `loadConfig` unless a test counts the reads. */
  load?: (path: string) => Promise<LoadedFile>;
}): FleetFollower {
  const { store, live, configPath, logger } = options;
  let version = 0;
  /** A reload here succeeded and its publication has not yet. */
  let unpublished = false;
  /** The last `differs` detail reported: logged once, not at every check. */
  let differs: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  const load = options.load ?? loadConfig;
  /**
   * The file as last read, with the stats of every path the read went through (the file, its
   * `tenants_dir` and the files there): a replica whose file differs reads it again only once one
   * of them changed — not a thousand tenant files every renewal.
   */
  let lastRead: { paths: readonly string[]; stats: string; digest: string | undefined } | undefined;

  /** The digest of this replica's file; undefined when it is missing or does not load. */
  async function fileDigest(): Promise<string | undefined> {
    if (configPath === undefined) return undefined;
    const paths = lastRead?.paths ?? [configPath];
    const before = await statsOf(paths, Date.now());
    if (before !== '' && lastRead?.stats === before) return lastRead.digest;
    const file = await load(configPath).catch(() => undefined);
    if (file === undefined) {
      // What made it fail may lie in a file the main one's stats do not cover: read it all again.
      lastRead = undefined;
      return undefined;
    }
    const digest = configDigest(file);
    // Kept only when the read went through the same paths and none moved meanwhile; else the
    // next check reads again (and keeps it then).
    const stable = sameList(file.readFrom, paths) && (await statsOf(paths, Date.now())) === before;
    lastRead = { paths: file.readFrom, stats: stable ? before : '', digest };
    return digest;
  }

  async function report(state: ConfigReport['state'], detail?: string): Promise<void> {
    differs = detail;
    await store.reportConfig({
      version,
      state,
      digest: configDigest(live.current()),
      ...(detail === undefined ? {} : { detail }),
    });
  }

  /** The fleet's version as this replica's file sees it: adopted, or reported as different. */
  async function follow(fleet: FleetConfig): Promise<void> {
    if (configDigest(live.current()) === fleet.digest) {
      version = fleet.version;
      return report('current');
    }
    if ((await fileDigest()) !== fleet.digest) {
      const detail = `this replica's file differs from the fleet's configuration version ${fleet.version}: keeping the configuration in force (version ${version})`;
      if (detail !== differs) {
        logger.warn({ fleetVersion: fleet.version, version }, 'fleet config differs from this file');
      }
      return report('differs', detail);
    }
    await live.reload();
    version = fleet.version;
    logger.info({ version }, 'reloaded to the fleet configuration');
    await report('current');
  }

  /** Makes the configuration in force the fleet's, unless the fleet runs it already. */
  async function publish(): Promise<void> {
    const digest = configDigest(live.current());
    // Each pod's reloader reloads the same file: only the first publishes a new version.
    const fleet = await store.fleetConfig();
    if (fleet?.digest === digest) version = fleet.version;
    else version = await store.publishConfig(digest);
    unpublished = false;
    logger.info({ version }, 'running the fleet configuration');
    await report('current');
  }

  async function check(): Promise<void> {
    // A reload here whose publication failed: the others follow once it is published.
    if (unpublished) return publish();
    const fleet = await store.fleetConfig();
    if (fleet === null) {
      version = await store.publishConfig(configDigest(live.current()));
      return;
    }
    if (fleet.version !== version || configDigest(live.current()) !== fleet.digest) await follow(fleet);
  }

  /** One check at a time: a timer tick and the pool's call may meet. */
  function checkOnce(): Promise<void> {
    checking ??= check().finally(() => {
      checking = undefined;
    });
    return checking;
  }

  return {
    async start() {
      // Redis away now is not a reason not to start: the next tick tries again.
      await checkOnce().catch((err: unknown) => logger.warn({ err }, 'fleet config check failed'));
      timer = setInterval(() => {
        checkOnce().catch((err: unknown) => logger.warn({ err }, 'fleet config check failed'));
      }, options.everyMs);
      timer.unref();
    },
    async published() {
      unpublished = true;
      // After the check under way, if any: it read the fleet before this reload.
      await checking?.catch(() => undefined);
      await checkOnce().catch((err: unknown) =>
        logger.warn({ err }, 'fleet config not published: trying again at the next check'),
      );
    },
    check: checkOnce,
    async reconcile() {
      await checking?.catch(() => undefined);
      const digest = await fileDigest();
      if (digest !== undefined && digest !== configDigest(live.current())) {
        await live.reload();
        unpublished = true;
      }
      await checkOnce();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
