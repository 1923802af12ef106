import type { Config } from '@switchboard/config';
import type { HistoryStore, Logger, Pipeline } from '@switchboard/core';
import {
  createEchoPipeline,
  createHttpPipeline,
  createOpenAIPipeline,
  createProcessPipeline,
  type WorkerIdentity,
} from '@switchboard/pipelines';

/** Builds every configured pipeline, keyed by id. None starts anything before its first turn. */
export function createPipelines(
  config: Config,
  deps: {
    history: HistoryStore;
    logger: Logger;
    /** The `run_as` of each `process` pipeline that has one, resolved (`isolateWorkers`). */
    workerIdentities: ReadonlyMap<string, WorkerIdentity>;
  },
): Map<string, Pipeline> {
  const pipelines = new Map<string, Pipeline>();
  for (const entry of config.pipelines) {
    switch (entry.type) {
      case 'echo':
        pipelines.set(entry.id, createEchoPipeline(entry.id));
        break;
      case 'http':
        pipelines.set(entry.id, createHttpPipeline(entry.id, entry.options));
        break;
      case 'openai':
        pipelines.set(entry.id, createOpenAIPipeline(entry.id, entry.options, deps));
        break;
      case 'process':
        pipelines.set(
          entry.id,
          createProcessPipeline(entry.id, entry.options, {
            logger: deps.logger,
            identity: deps.workerIdentities.get(entry.id),
          }),
        );
        break;
    }
  }
  return pipelines;
}
