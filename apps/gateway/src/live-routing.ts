import type { ChannelConfig, Config } from '@switchboard/config';
import {
  DISCARD,
  type InboundMessage,
  type Logger,
  type Router,
  SwitchboardError,
  createRouter,
} from '@switchboard/core';
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
  /**
   * Where the rules in force send `message` (a replayed dead letter whose pipeline was removed);
   * throws SB_DEAD_LETTER_NOT_REPLAYABLE when they discard it.
   */
  reroute(message: InboundMessage): { pipeline: string; rule?: string };
  /** Puts `config`'s rules in force; the pipelines they name must be configured by now. */
  apply(config: Config): void;
}

/**
 * The routing of `config`, swapped whole by a reload (`apply`). Hit counts are kept per rule name
 * across reloads, on this replica since its start.
 */
export function createLiveRouting(config: Config, options: { logger: Logger }): LiveRouting {
  const { logger } = options;
  const hits = createRouteHits();
  let routing = config.routing;
  let router: Router = hits.counting(routerOf(config));

  return {
    router: () => router,
    view: () => routingView(routing, hits),
    dryRun: (channel, input) => dryRunRoute(router, channel, input),
    reroute(message) {
      const decision = router.route(message);
      if (decision.pipeline === DISCARD) {
        throw new SwitchboardError('SB_DEAD_LETTER_NOT_REPLAYABLE', {
          message: `its pipeline is no longer configured, and the routing in force discards it (${decision.rule ?? 'default'})`,
        });
      }
      return { pipeline: decision.pipeline, ...(decision.rule === null ? {} : { rule: decision.rule }) };
    },
    apply(next) {
      router = hits.counting(routerOf(next));
      routing = next.routing;
      logger.info({ rules: next.routing.rules.length }, 'routing reloaded');
    },
  };
}

function routerOf(config: Config): Router {
  return createRouter(config.routing, { pipelines: config.pipelines.map((pipeline) => pipeline.id) });
}
