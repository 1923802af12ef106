// PLACEHOLDER — being implemented (see helper task). API contract:
import { z } from 'zod';
import type { InboundMessage } from './message.js';

/** The routing target that discards a message (recorded in the audit log). */
export const DISCARD = '__discard__';

export const RoutingSchema = z.strictObject({
  default: z.string().min(1),
  rules: z.array(z.any()).default([]),
});
export type RoutingConfig = z.output<typeof RoutingSchema>;
export type RoutingConfigInput = z.input<typeof RoutingSchema>;

export interface RouteDecision {
  pipeline: string;
  rule: string | null;
  routedByRule: boolean;
}

export interface Router {
  route(message: InboundMessage): RouteDecision;
}

export function createRouter(
  _routing: RoutingConfigInput,
  _options: { pipelines: Iterable<string> },
): Router {
  throw new Error('not implemented');
}
