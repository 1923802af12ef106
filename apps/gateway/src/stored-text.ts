import type { AuditConfig } from '@switchboard/config';
import type { Element, InboundMessage, Reply } from '@switchboard/core';

type StoreText = AuditConfig['storeText'];

/** The audit `text` column under `audit.store_text`: the whole text, none (null) or its first n characters. */
export function keptText(text: string, storeText: StoreText): string | null {
  if (storeText === 'none') return null;
  if (storeText === 'full') return text;
  return text.slice(0, storeText);
}

/**
 * Replies as the admin views may show them: only under `full` (a reply quotes and answers the
 * text, so it is as private), at most `maxReplies`, each cut to `maxChars`.
 */
export function keptReplies(
  replies: readonly Reply[] | undefined,
  storeText: StoreText,
  limits: { maxReplies: number; maxChars: number },
): Reply[] {
  if (storeText !== 'full' || replies === undefined) return [];
  return replies
    .slice(0, limits.maxReplies)
    .map((reply) =>
      reply.text.length > limits.maxChars ? { ...reply, text: reply.text.slice(0, limits.maxChars) } : reply,
    );
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
