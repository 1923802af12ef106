import type { InboundMessage } from './message.js';

/**
 * Whether a thread is a conversation of its own (`thread`) or part of its chat (`chat`).
 * Configured per channel as `session_scope`.
 */
export type SessionScope = 'chat' | 'thread';

/**
 * The ordering unit: two messages must run one after the other iff their keys are equal
 * (DESIGN §2). Parts are URI-encoded so that an id containing `:` cannot collide with another.
 */
export type SessionKey = string;

/** The session key of `message`: platform + channel + chat type + chat id (+ thread). */
export function sessionKeyOf(message: InboundMessage, scope: SessionScope = 'chat'): SessionKey {
  const parts = [message.platform, message.channel, message.chat.type, message.chat.id];
  if (scope === 'thread' && message.chat.thread !== undefined) parts.push(message.chat.thread);
  return parts.map(encodeURIComponent).join(':');
}
