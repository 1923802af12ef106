import type { RoutingConfig, RoutingRule } from '@switchboard/core';
import type { RouteHits } from './route-hits.js';

/** `GET /admin/routing`: the rules in the order they are tried, each with its hits, then the default. */
export interface RoutingView {
  rules: Array<RoutingRule & { hits: number }>;
  default: { pipeline: string; hits: number };
}

/** The routing in force and how many messages each rule routed on this replica since its start. */
export function routingView(routing: RoutingConfig, hits: RouteHits): RoutingView {
  return {
    rules: routing.rules.map((rule) => ({ ...rule, hits: hits.of(rule.name) })),
    default: { pipeline: routing.default, hits: hits.of(null) },
  };
}
