import { SwitchboardError } from './errors.js';
import type { InboundMessage } from './message.js';
import { UNPAIRED_SURROGATE } from './unpaired-surrogate.js';

/**
 * Whether a thread is a conversation of its own (`thread`) or part of its chat (`chat`).
 * Configured per channel as `session_scope`.
 */
export type SessionScope = 'chat' | 'thread';

/**
 * The ordering unit: two messages must run one after the other iff their keys are equal
 * (docs/design.md §2). Parts are URI-encoded so that an id containing `:` cannot collide with another.
 */
export type SessionKey = string;

/** The characters `encodeURIComponent` writes as they are. */
const UNRESERVED = /^[\w.!~*'()-]*$/;

/**
 * `part` URI-encoded, total over every string. Platform ids arrive as the platform sent them —
 * a signed Slack event may carry `"\ud800"` — and a throw here would answer the platform 500 and
 * have it redeliver forever. An unpaired surrogate becomes `%uD800`, which `encodeURIComponent`
 * never writes (`u` is no hex digit), so distinct ids keep distinct keys.
 */
export function encodeKeyPart(part: string): string {
  // Most ids are made of what encodeURIComponent leaves as is: no walk, no new string.
  if (UNRESERVED.test(part)) return part;
  let encoded = '';
  let from = 0;
  for (const match of part.matchAll(UNPAIRED_SURROGATE)) {
    const unit = match[0].charCodeAt(0).toString(16).toUpperCase();
    encoded += `${encodeURIComponent(part.slice(from, match.index))}%u${unit}`;
    from = match.index + 1;
  }
  return encoded + encodeURIComponent(part.slice(from));
}

/** The session key of `message`: platform + channel + chat type + chat id (+ thread). */
export function sessionKeyOf(message: InboundMessage, scope: SessionScope = 'chat'): SessionKey {
  const parts = [message.platform, message.channel, message.chat.type, message.chat.id];
  if (scope === 'thread' && message.chat.thread !== undefined) parts.push(message.chat.thread);
  return parts.map(encodeKeyPart).join(':');
}

/** Where a session key says its messages come from (the inverse of `sessionKeyOf`). */
export interface SessionAddress {
  platform: string;
  channel: string;
  chat: { type: 'person' | 'group'; id: string; thread?: string };
}

const ENCODED_SURROGATE = /%u([0-9A-F]{4})/g;

/** `encodeKeyPart` undone: `%uD800` back to its unpaired surrogate, the rest URI-decoded. */
function decodeKeyPart(part: string): string {
  return part
    .split(ENCODED_SURROGATE)
    .map((piece, index) =>
      index % 2 === 1 ? String.fromCharCode(Number.parseInt(piece, 16)) : decodeURIComponent(piece),
    )
    .join('');
}

/**
 * The platform, channel and chat `key` names — an operator addresses a session by its key alone
 * (`/admin/sessions/{key}`); throws SB_SESSION_KEY_INVALID naming what is wrong.
 */
export function sessionAddressOf(key: SessionKey): SessionAddress {
  const parts = key.split(':');
  const invalid = (why: string) =>
    new SwitchboardError('SB_SESSION_KEY_INVALID', {
      message: `"${key.slice(0, 200)}" is not a session key: ${why} (expected platform:channel:person|group:chat[:thread])`,
    });
  if (parts.length !== 4 && parts.length !== 5) throw invalid(`${parts.length} parts`);
  let decoded: string[];
  try {
    decoded = parts.map(decodeKeyPart);
  } catch {
    throw invalid('a part is not URI-encoded');
  }
  const [platform, channel, type, id, thread] = decoded as [string, string, string, string, string?];
  if (type !== 'person' && type !== 'group') throw invalid(`chat type "${type}"`);
  if (platform === '' || channel === '' || id === '') throw invalid('an empty part');
  // One session, one key: `%34%32` for `42` would name a session no message ever lands in.
  const canonical = decoded.map(encodeKeyPart).join(':');
  if (canonical !== key)
    throw invalid(`not written as its messages' key, which is "${canonical.slice(0, 200)}"`);
  return { platform, channel, chat: { type, id, ...(thread === undefined ? {} : { thread }) } };
}
