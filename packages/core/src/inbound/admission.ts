import { z } from 'zod';
import type { InboundMessage } from '../model/message.js';

/** `channels[].group`: when a chat channel answers in groups (docs/design.md §2 "Admission"). */
export const GroupPolicySchema = z.strictObject({
  /** Answer in groups only when the bot is mentioned or a prefix starts the text. */
  require_mention: z.boolean().default(true),
  /** Texts starting with one of these (after leading whitespace) count as addressed to the bot. */
  prefixes: z.array(z.string().min(1)).default([]),
});
export type AdmissionPolicy = z.output<typeof GroupPolicySchema>;

export type AdmissionDecision =
  | { admitted: true }
  | { admitted: false; reason: 'bot_author' | 'not_mentioned' };

const ADMITTED: AdmissionDecision = Object.freeze({ admitted: true });

/**
 * Whether the gateway answers `message`. Bot authors (the bot itself included) are never
 * answered, so that two bots cannot talk to each other forever. In groups the bot answers only
 * when addressed, unless a routing rule picked the message explicitly (LangBot's
 * `routed_by_rule` bypasses the group respond rules, as in LangBot).
 */
export function admit(
  message: InboundMessage,
  policy: AdmissionPolicy,
  routedByRule: boolean,
): AdmissionDecision {
  if (message.sender.is_bot) return { admitted: false, reason: 'bot_author' };
  if (message.chat.type === 'person' || routedByRule || !policy.require_mention || message.mentions_bot) {
    return ADMITTED;
  }
  const text = message.text.trimStart();
  if (policy.prefixes.some((prefix) => text.startsWith(prefix))) return ADMITTED;
  return { admitted: false, reason: 'not_mentioned' };
}
