import { type LoadedConfig, loadConfig } from '@switchboard/config';
import { silentLogger } from '@switchboard/core';
import { createPipeline } from '../pipelines.js';
import { isolateWorkers } from '../worker-isolation.js';
import type { CommandIo } from './io.js';

/**
 * Loads and validates the file as a start would: the workers' `run_as` can be applied on this
 * host, and every pipeline can be built (what only a factory can see), without starting anything.
 * Throws the coded error of the first check that refuses it.
 */
export async function validateConfig(path: string): Promise<LoadedConfig> {
  const config = await loadConfig(path);
  // What a start would refuse on this host: a `run_as` it cannot apply, files its workers could read.
  const workerIdentities = isolateWorkers(config, { configPath: path, secretFiles: config.secretFiles });
  const deps = {
    history: { append: async () => {}, recent: async () => [] },
    logger: silentLogger,
    workerIdentities,
  };
  for (const entry of config.pipelines) createPipeline(entry, deps);
  return config;
}

/** `switchboard config check`: exit 0 and a summary when the file is valid (`validateConfig`). */
export async function configCheck(path: string, io: CommandIo): Promise<number> {
  const config = await validateConfig(path);
  io.out(
    `${path}: ok — ${config.channels.length} channel(s), ${config.pipelines.length} pipeline(s), ` +
      `${config.routing.rules.length} rule(s), default pipeline "${config.routing.default}", store ${config.store.kind}` +
      (config.tenants.length > 1 ? `, ${config.tenants.length - 1} more tenant(s)` : ''),
  );
  return 0;
}
