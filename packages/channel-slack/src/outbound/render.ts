import { splitReplies } from '@switchboard/channel-kit';
import type { InboundMessage, Reply } from '@switchboard/core';

/** The `chat.postMessage` arguments of one reply chunk. */
export interface SlackPostMessage {
  channel: string;
  text: string;
  /** Set when the origin was in a thread, so the answer stays in it. */
  thread_ts?: string;
}

/**
 * Slack truncates `text` past 40,000 characters and advises staying under 4,000 for readability;
 * longer replies are split, at a newline when there is one in the second half of the chunk.
 */
export const MAX_CHUNK_CHARS = 4_000;

/** `&`, `<` and `>` are Slack's control characters; escaping keeps a reply's text literal. */
function escapeText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * The messages that answer `origin` with `replies`: one or more per reply, in order, posted in
 * the origin's Slack channel and, when it was in a thread, in that thread. Empty replies are
 * skipped (Slack refuses them with `no_text`). Pure.
 */
export function renderSlackReplies(origin: InboundMessage, replies: readonly Reply[]): SlackPostMessage[] {
  const thread = origin.chat.thread === undefined ? {} : { thread_ts: origin.chat.thread };
  return splitReplies(replies, MAX_CHUNK_CHARS).map(({ text }) => ({
    channel: origin.chat.id,
    text: escapeText(text),
    ...thread,
  }));
}

/** Where an assistant thread's status is set (`assistant.threads.setStatus`). */
export interface AssistantThread {
  channel_id: string;
  thread_ts: string;
}

/**
 * The assistant thread `origin` was written in, or undefined. Slack's AI assistant threads are
 * threads of the app's direct messages: only there can an app show a status; a channel or a
 * direct message outside a thread has no typing signal for apps.
 */
export function assistantThreadOf(origin: InboundMessage): AssistantThread | undefined {
  if (origin.chat.type !== 'person' || origin.chat.thread === undefined) return undefined;
  return { channel_id: origin.chat.id, thread_ts: origin.chat.thread };
}
