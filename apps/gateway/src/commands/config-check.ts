import { loadConfig } from '@switchboard/config';
import { silentLogger } from '@switchboard/core';
import { createPipeline } from '../pipelines.js';
import { isolateWorkers } from '../worker-isolation.js';
import type { CommandIo } from './io.js';

/**
 * `switchboard config check`: loads and validates the file, and checks that the workers' `run_as`
 * can be applied on this host; exit 0 and a summary when it is valid.
 */
export async function configCheck(path: string, io: CommandIo): Promise<number> {
  const config = await loadConfig(path);
  // What a start would refuse on this host: a `run_as` it cannot apply, files its workers could read.
  const workerIdentities = isolateWorkers(config, { configPath: path, secretFiles: config.secretFiles });
  // Building the pipelines catches what only a factory can see, without starting anything.
  const deps = {
    history: { append: async () => {}, recent: async () => [] },
    logger: silentLogger,
    workerIdentities,
  };
  for (const entry of config.pipelines) createPipeline(entry, deps);
  io.out(
    `${path}: ok — ${config.channels.length} channel(s), ${config.pipelines.length} pipeline(s), ` +
      `${config.routing.rules.length} rule(s), default pipeline "${config.routing.default}", store ${config.store.kind}`,
  );
  return 0;
}
