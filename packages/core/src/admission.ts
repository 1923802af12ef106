// PLACEHOLDER — being implemented (see helper task). API contract:
import { z } from 'zod';
import type { InboundMessage } from './message.js';

export const GroupPolicySchema = z.strictObject({
  require_mention: z.boolean().default(true),
  prefixes: z.array(z.string().min(1)).default([]),
});
export type AdmissionPolicy = z.output<typeof GroupPolicySchema>;

export type AdmissionDecision =
  | { admitted: true }
  | { admitted: false; reason: 'bot_author' | 'not_mentioned' };

export function admit(
  _message: InboundMessage,
  _policy: AdmissionPolicy,
  _routedByRule: boolean,
): AdmissionDecision {
  throw new Error('not implemented');
}
