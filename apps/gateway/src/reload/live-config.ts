import { type Config, type LoadedConfig, loadConfig } from '@switchboard/config';
import {
  type Logger,
  type PoolConfig,
  type QueryPool,
  SwitchboardError,
  isSwitchboardError,
} from '@switchboard/core';
import type { Channels } from '../channels.js';
import type { LiveRouting } from '../live-routing.js';
import {
  type PipelineDeps,
  type Pipelines,
  createPipeline,
  poolPipelinesOf,
  poolTenantsOf,
} from '../pipelines.js';
import { isolateWorkers } from '../worker-isolation.js';
import { type ConfigChanges, configChanges } from './config-changes.js';

/** What `POST /admin/reload` answers. */
export interface ReloadResult {
  /** One line per change (`channels.slack: added`, `concurrency.global`, `routing`); empty: none. */
  changed: string[];
}

/** The configuration in force, and its reload from the file (`SIGHUP`, `POST /admin/reload`). */
export interface LiveConfig {
  /** The configuration in force. */
  current(): Config;
  /**
   * Re-reads the file and puts what changed in force (docs/design.md §7 "Reload"): channels,
   * pipelines, limits and routing. A file that does not load, or that changes what needs a
   * restart, is refused with the paths named, and nothing changes.
   */
  reload(): Promise<ReloadResult>;
  /**
   * Shutdown began: every reload from now on is refused (SB_DRAINING), as is one still reading
   * the file. The drain does not wait for one applying already: its channel puts are refused
   * from the drain on, or end before the channels stop (`Channels`).
   */
  stop(): void;
}

export interface LiveConfigDeps {
  /** The file the configuration came from; none: reload refuses. */
  configPath: string | undefined;
  channels: Channels;
  pipelines: Pipelines;
  pool: QueryPool;
  routing: LiveRouting;
  /** What each reload builds its pipelines with (the `run_as` identities are resolved again). */
  pipelineDeps: Omit<PipelineDeps, 'workerIdentities'>;
  /** The new file's secrets join those the logs and outcomes mask. */
  addSecrets(secrets: readonly string[]): void;
  logger: Logger;
}

/** What the pool schedules by, from `config`. */
function poolConfigOf(config: Config): PoolConfig {
  return {
    concurrency: config.concurrency,
    limits: config.queue,
    pipelines: poolPipelinesOf(config),
    tenants: poolTenantsOf(config),
  };
}

/** The file's configuration, or SB_CONFIG_NOT_FOUND when there is no file. */
async function reread(configPath: string | undefined): Promise<LoadedConfig> {
  if (configPath === undefined) {
    throw new SwitchboardError('SB_CONFIG_NOT_FOUND', { message: 'no configuration file to reload' });
  }
  return loadConfig(configPath);
}

/**
 * The configuration of `config`, reloaded one reload at a time. The order keeps every message
 * somewhere to go: pipelines added or changed first, then limits, routing and channels (the
 * single-owner ones removed before any is added, the others after), and the
 * pipelines removed last, once no rule sends to them (their queued messages are dead-lettered
 * `pipeline_removed` when claimed, replayable through the routing in force).
 */
export function createLiveConfig(config: Config, deps: LiveConfigDeps): LiveConfig {
  const { channels, pipelines, pool, routing, logger } = deps;
  let current = config;
  /** The limits and policies the pool was last given: compared apart, since storing them may fail. */
  let poolInForce = poolConfigOf(config);
  let reloading: Promise<unknown> = Promise.resolve();
  /** The reload queued behind the one under way, not started yet. */
  let waiting: Promise<ReloadResult> | undefined;
  let stopped = false;

  /**
   * Puts `changes` in force. Throws, with nothing in force, when a pipeline cannot be built;
   * returns the first failure of the pool or a channel, with everything else in force.
   */
  async function apply(next: LoadedConfig, changes: ConfigChanges): Promise<unknown> {
    const workerIdentities = isolateWorkers(next, {
      configPath: deps.configPath,
      secretFiles: next.secretFiles,
    });
    deps.addSecrets(next.secrets);
    // Built before anything changes: a pipeline that cannot be built fails the reload whole.
    const built = [...changes.pipelines.added, ...changes.pipelines.changed].map((entry) => ({
      entry,
      pipeline: createPipeline(entry, { ...deps.pipelineDeps, workerIdentities }),
    }));
    // The pipelines before the limits: a turn the new limits let start runs on the new definition.
    for (const { entry, pipeline } of built) pipelines.put(entry, pipeline);
    let failed: unknown;
    const wanted = poolConfigOf(next);
    if (JSON.stringify(wanted) !== JSON.stringify(poolInForce)) {
      try {
        await pool.reconfigure(wanted);
        poolInForce = wanted;
      } catch (err) {
        // A shared pool's Redis away: the next reload stores them (`poolInForce` is the old).
        failed = err;
      }
    }
    const pipelinesChanged = changes.pipelines.added.length + changes.pipelines.removed.length > 0;
    if (changes.routing || pipelinesChanged) routing.apply(next);
    // A single-owner connection renamed keeps its token under another lease: the old one stops
    // before the new one connects, or both would poll the token for a while.
    const singleOwner = (id: string) => channels.adapters.get(id)?.singleConsumer === true;
    const removed = changes.channels.removed;
    const steps = [
      ...removed.filter(singleOwner).map((id) => () => channels.remove(id)),
      ...[...changes.channels.added, ...changes.channels.changed].map(
        (channel) => () => channels.put(channel),
      ),
      ...removed.filter((id) => !singleOwner(id)).map((id) => () => channels.remove(id)),
    ];
    // A channel that fails to start gives way to the one before it (`Channels.put`); the others
    // go on, and the first failure is the reload's answer.
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        failed ??= err;
        if (isSwitchboardError(err, 'SB_DRAINING')) break;
      }
    }
    for (const id of changes.pipelines.removed) pipelines.remove(id);
    return failed;
  }

  function refuseOnceStopped(): void {
    if (stopped) {
      throw new SwitchboardError('SB_DRAINING', { message: 'the gateway is shutting down: no reload' });
    }
  }

  async function reload(): Promise<ReloadResult> {
    refuseOnceStopped();
    const next = await reread(deps.configPath);
    refuseOnceStopped();
    const changes = configChanges(current, next);
    if (changes.refused.length > 0) {
      throw new SwitchboardError('SB_RELOAD_REFUSED', {
        message: `these settings change only with a restart; nothing was reloaded: ${changes.refused.join(', ')}`,
        details: { paths: changes.refused },
      });
    }
    const failed = await apply(next, changes);
    if (failed !== undefined) {
      // The rest is in force: the next reload compares with what runs, not with the old file.
      current = { ...next, channels: channels.configs() };
      throw failed;
    }
    current = next;
    logger.info(
      { changed: changes.summary },
      changes.summary.length === 0 ? 'reload: nothing changed' : 'reloaded',
    );
    return { changed: changes.summary };
  }

  return {
    current: () => current,
    reload() {
      // Reloads asked for while one waits share it: it reads the file after all of them.
      if (waiting !== undefined) return waiting;
      const run = reloading.then(() => {
        waiting = undefined;
        return reload();
      });
      waiting = run;
      reloading = run.catch(() => undefined);
      return run;
    },
    stop() {
      stopped = true;
    },
  };
}
