import type { Router } from '@switchboard/core';

/**
 * How many routing decisions each rule (and the default) made since the process started. Routing
 * comes before admission (which reads whether a rule matched) and before deduplication, so an
 * ignored message and a platform's redelivery count too: a hit says a rule matched, not that a
 * message ran.
 */
export interface RouteHits {
  /** `router` counting what it routes; `explain` (dry runs) is not counted. */
  counting(router: Router): Router;
  /** Messages routed by the rule named `rule`, or by the default when null. */
  of(rule: string | null): number;
}

/**
 * Hit counts per rule for `GET /admin/routing`. One counter per rule name, kept across routing
 * reloads (a renamed rule starts at 0); counting a message updates one map entry and allocates
 * nothing, so the message path does not feel it.
 */
export function createRouteHits(): RouteHits {
  const hits = new Map<string, number>();
  let defaultHits = 0;
  return {
    counting(router) {
      return {
        route(message) {
          const decision = router.route(message);
          if (decision.rule === null) defaultHits += 1;
          else hits.set(decision.rule, (hits.get(decision.rule) ?? 0) + 1);
          return decision;
        },
        explain: (message) => router.explain(message),
      };
    },
    of(rule) {
      return rule === null ? defaultHits : (hits.get(rule) ?? 0);
    },
  };
}
