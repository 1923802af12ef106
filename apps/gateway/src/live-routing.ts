import { type ChannelConfig, type Config, loadConfig } from '@switchboard/config';
import { type Logger, type Router, SwitchboardError, createRouter } from '@switchboard/core';
import { type DryRunInput, type DryRunResult, dryRunRoute } from './admin/route-dry-run.js';
import { createRouteHits } from './admin/route-hits.js';
import { type RoutingView, routingView } from './admin/routing-view.js';

/** The routing rules in force: counted as they route, swapped whole by a reload. */
export interface LiveRouting {
  /** The router in force now: ingress asks for it for each message. */
  router(): Router;
  /** The rules in force with their hit counts (`GET /admin/routing`). */
  view(): RoutingView;
  /** Routes `input` as if it came through `channel`, counting nothing (`POST /admin/route`). */
  dryRun(channel: ChannelConfig, input: DryRunInput): DryRunResult;
  /** Re-reads the config file and swaps the rules; a bad file throws and keeps the old rules. */
  reload(): Promise<{ rules: number }>;
}

/**
 * The routing of `config`, reloaded from `configPath` on `SIGHUP` and `POST /admin/reload`. Hit
 * counts are kept per rule name across reloads, on this replica since its start.
 */
export function createLiveRouting(
  config: Config,
  options: { configPath: string | undefined; logger: Logger },
): LiveRouting {
  const { configPath, logger } = options;
  const pipelineIds = config.pipelines.map((pipeline) => pipeline.id);
  const hits = createRouteHits();
  let routing = config.routing;
  let router: Router = hits.counting(createRouter(routing, { pipelines: pipelineIds }));

  return {
    router: () => router,
    view: () => routingView(routing, hits),
    dryRun: (channel, input) => dryRunRoute(router, channel, input),
    async reload() {
      if (configPath === undefined) {
        throw new SwitchboardError('SB_CONFIG_NOT_FOUND', { message: 'no configuration file to reload' });
      }
      const next = await loadConfig(configPath);
      const nextRouter = createRouter(next.routing, { pipelines: pipelineIds });
      router = hits.counting(nextRouter);
      routing = next.routing;
      logger.info({ rules: next.routing.rules.length, path: configPath }, 'routing reloaded');
      return { rules: next.routing.rules.length };
    },
  };
}
