import type { AuditConfig } from '@switchboard/config';
import { type Element, type InboundMessage, type Reply, base64Bytes } from '@switchboard/core';

type StoreText = AuditConfig['storeText'];

/** The audit `text` column under `audit.store_text`: the whole text, none (null) or its first n characters. */
export function keptText(text: string, storeText: StoreText): string | null {
  if (storeText === 'none') return null;
  if (storeText === 'full') return text;
  return text.slice(0, storeText);
}

/**
 * `text` itself when it is within `maxChars`, else its first `maxChars` characters as a string of
 * their own: V8 makes a slice a view that keeps the whole text alive, which would leave what is
 * kept in memory unbounded. JSON round-trips every string exactly, lone surrogates included.
 */
export function boundedText(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : JSON.parse(JSON.stringify(text.slice(0, maxChars)));
}

/** No replies, shared. */
export const NO_REPLIES: readonly Reply[] = Object.freeze([]);

/**
 * Replies as the admin views may show them: only under `full` (a reply quotes and answers the
 * text, so it is as private), at most `maxReplies`, each cut to `maxChars` — the same array when
 * none is cut (the usual case).
 */
export function keptReplies(
  replies: readonly Reply[] | undefined,
  storeText: StoreText,
  limits: { maxReplies: number; maxChars: number },
): readonly Reply[] {
  if (storeText !== 'full' || replies === undefined) return NO_REPLIES;
  const few = replies.length > limits.maxReplies ? replies.slice(0, limits.maxReplies) : replies;
  for (const reply of few) {
    if (
      (reply.text?.length ?? 0) > limits.maxChars ||
      reply.attachments?.some((file) => file.data !== undefined)
    )
      return few.map((each) => keptReply(each, limits.maxChars));
  }
  return few;
}

/**
 * `reply` with its text cut to `maxChars` and its attachments' `data` left out: up to 20 MB of
 * base64 each, which the views have no use for (`data_bytes` says how much there was).
 */
function keptReply(reply: Reply, maxChars: number): Reply {
  const attachments = reply.attachments?.map(({ data, ...file }) =>
    data === undefined ? file : { ...file, data: '', data_bytes: base64Bytes(data) },
  );
  return {
    ...(reply.text === undefined ? {} : { text: boundedText(reply.text, maxChars) }),
    ...(attachments === undefined ? {} : { attachments }),
  };
}

/** A dead letter's message as `audit.store_text` lets the audit log keep it. */
export interface KeptMessage {
  message: InboundMessage;
  /** True when nothing was cut: the message can be run again as it was. */
  whole: boolean;
}

/**
 * The message a dead letter keeps for replay under `audit.store_text`. `full` keeps it as it is.
 * `none` keeps no text and no elements; a number cuts the text and every text an element holds
 * (text, quote, command arguments) to that many characters. Both drop the raw platform event,
 * which repeats the text (and quoted texts) in a shape of its own that cannot be cut field by
 * field; nothing that runs a replay reads it. `whole` says whether anything was cut.
 */
export function keptMessage(message: InboundMessage, storeText: StoreText): KeptMessage {
  if (storeText === 'full') return { message, whole: true };
  const limit = storeText === 'none' ? 0 : storeText;
  let whole = true;
  const cut = (text: string): string => {
    if (text.length > limit) whole = false;
    return text.slice(0, limit);
  };
  const { raw: _raw, ...kept } = message;
  if (storeText === 'none' && message.elements.length > 0) whole = false;
  const elements = storeText === 'none' ? [] : message.elements.map((element) => cutElement(element, cut));
  return { message: { ...kept, text: cut(message.text), elements }, whole };
}

function cutElement(element: Element, cut: (text: string) => string): Element {
  switch (element.type) {
    case 'text':
      return { ...element, text: cut(element.text) };
    case 'quote':
      return element.text === undefined ? element : { ...element, text: cut(element.text) };
    case 'command':
      return { ...element, args: cut(element.args) };
    default:
      return element;
  }
}
