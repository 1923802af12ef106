import type { Config, PipelineConfig } from '@switchboard/config';
import {
  HANDOFF_POLICY,
  type HistoryStore,
  type Logger,
  type Pipeline,
  type PipelinePolicy,
  type PoolPipelinePolicy,
  type TenantShare,
} from '@switchboard/core';
import {
  createEchoPipeline,
  createHttpPipeline,
  createOpenAIPipeline,
  createProcessPipeline,
  type WorkerIdentity,
} from '@switchboard/pipelines';

export interface PipelineDeps {
  history: HistoryStore;
  logger: Logger;
  /** The `run_as` of each `process` pipeline that has one, resolved (`isolateWorkers`). */
  workerIdentities: ReadonlyMap<string, WorkerIdentity>;
}

/** Builds one configured pipeline. None starts anything before its first turn. */
export function createPipeline(entry: PipelineConfig, deps: PipelineDeps): Pipeline {
  switch (entry.type) {
    case 'echo':
      return createEchoPipeline(entry.id);
    case 'http':
      return createHttpPipeline(entry.id, entry.options);
    case 'openai':
      return createOpenAIPipeline(entry.id, entry.options, deps);
    case 'process':
      return createProcessPipeline(entry.id, entry.options, {
        logger: deps.logger,
        identity: deps.workerIdentities.get(entry.id),
      });
  }
}

/** The pipelines in force on this replica: built at start, added, replaced or removed by a reload. */
export interface Pipelines {
  /** Pipeline id → the pipeline new turns run on. */
  pipelines: ReadonlyMap<string, Pipeline>;
  /** Pipeline id → its policy, for the turns that start from now on. */
  policies: ReadonlyMap<string, PipelinePolicy>;
  /**
   * Puts `pipeline`, built from `entry` (`createPipeline`), in force for the turns that start from
   * now on; the turns running on the one it replaces finish there, and that one is stopped once
   * they have (within `retireTimeoutMs`).
   */
  put(entry: PipelineConfig, pipeline: Pipeline): void;
  /** Starts no more turn on pipeline `id`; stops it once its running turns have finished. */
  remove(id: string): void;
  /** Stops every pipeline within `timeoutMs` (after the controller's drain). */
  stop(timeoutMs: number): Promise<void>;
}

/** A pipeline that counts its runs, so that it can be stopped once none is left. */
interface Tracked {
  pipeline: Pipeline;
  /** Resolves once no run is under way. */
  idle(): Promise<void>;
}

function tracked(pipeline: Pipeline): Tracked {
  let running = 0;
  let idle: (() => void) | undefined;
  let whenIdle: Promise<void> | undefined;
  const counted: Pipeline = {
    id: pipeline.id,
    async run(query, context) {
      running += 1;
      try {
        return await pipeline.run(query, context);
      } finally {
        running -= 1;
        if (running === 0) idle?.();
      }
    },
    ...(pipeline.status === undefined ? {} : { status: pipeline.status.bind(pipeline) }),
    ...(pipeline.stop === undefined ? {} : { stop: pipeline.stop.bind(pipeline) }),
  };
  return {
    pipeline: counted,
    idle() {
      if (running === 0) return Promise.resolve();
      whenIdle ??= new Promise<void>((resolve) => {
        idle = resolve;
      });
      return whenIdle;
    },
  };
}

/**
 * The configured pipelines. One a reload replaces or removes stops only after its turns under
 * way ended (or `retireTimeoutMs` passed: `shutdown.drain_timeout`), so that a worker process is
 * not taken from a turn it runs.
 */
export function createPipelines(config: Config, deps: PipelineDeps & { retireTimeoutMs: number }): Pipelines {
  const { logger, retireTimeoutMs } = deps;
  const entries = new Map<string, Tracked>();
  const pipelines = new Map<string, Pipeline>();
  const policies = new Map<string, PipelinePolicy>();

  function retire(old: Tracked | undefined): void {
    if (old === undefined) return;
    void (async () => {
      const started = Date.now();
      await Promise.race([
        old.idle(),
        new Promise((resolve) => setTimeout(resolve, retireTimeoutMs).unref()),
      ]);
      await old.pipeline.stop?.({ timeoutMs: Math.max(0, retireTimeoutMs - (Date.now() - started)) });
    })().catch((err: unknown) => logger.error({ err, pipeline: old.pipeline.id }, 'pipeline stop failed'));
  }

  function put(entry: PipelineConfig, pipeline: Pipeline): void {
    const previous = entries.get(entry.id);
    const next = tracked(pipeline);
    entries.set(entry.id, next);
    pipelines.set(entry.id, next.pipeline);
    policies.set(entry.id, entry.policy);
    retire(previous);
  }

  for (const entry of config.pipelines) put(entry, createPipeline(entry, deps));

  return {
    pipelines,
    policies,
    put,
    remove(id) {
      const previous = entries.get(id);
      entries.delete(id);
      pipelines.delete(id);
      policies.delete(id);
      retire(previous);
    },
    async stop(timeoutMs) {
      await Promise.all([...pipelines.values()].map((pipeline) => pipeline.stop?.({ timeoutMs })));
    },
  };
}

/**
 * What the pool schedules: each configured pipeline's policy with its tenant, and
 * `__handoff__`'s, whose turns only begin a handoff and hold their messages (`HANDOFF_POLICY`).
 */
export function poolPipelinesOf(config: Config): (PipelinePolicy & PoolPipelinePolicy)[] {
  const tenantOf = new Map(
    config.tenants.flatMap((tenant) => tenant.pipelines.map((pipeline) => [pipeline, tenant.id] as const)),
  );
  return [
    ...config.pipelines.map((pipeline) => ({ ...pipeline.policy, tenant: tenantOf.get(pipeline.id) })),
    HANDOFF_POLICY,
  ];
}

/** The tenants' shares of the pool (`tenants[].concurrency`, `weight`, `max_pending`). */
export function poolTenantsOf(config: Config): TenantShare[] {
  return config.tenants.map((tenant) => tenant.share);
}
