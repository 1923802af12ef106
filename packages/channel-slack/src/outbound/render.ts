import { splitRepliesWithAttachments } from '@switchboard/channel-kit';
import type { Attachment, InboundMessage, Reply } from '@switchboard/core';

/** The `chat.postMessage` arguments of one reply chunk. */
export interface SlackPostMessage {
  channel: string;
  text: string;
  /** Set when the origin was in a thread, so the answer stays in it. */
  thread_ts?: string;
}

/** A file of a reply, uploaded (files upload v2) and shared where the messages go. */
export interface SlackFileUpload {
  channel: string;
  attachment: Attachment;
  thread_ts?: string;
}

/** One Web API call of a send: a message or a file. */
export type SlackPart = SlackPostMessage | SlackFileUpload;

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
 * The messages and files that answer `origin` with `replies`, in order: each reply's files as it
 * lists them, then its text in one or more messages, all posted in the origin's Slack channel
 * and, when it was in a thread, in that thread. Empty texts are skipped (Slack refuses them with
 * `no_text`). Pure.
 */
export function renderSlackReplies(origin: InboundMessage, replies: readonly Reply[]): SlackPart[] {
  const thread = origin.chat.thread === undefined ? {} : { thread_ts: origin.chat.thread };
  return splitRepliesWithAttachments(replies, MAX_CHUNK_CHARS).map((part) => ({
    channel: origin.chat.id,
    ...('text' in part ? { text: escapeText(part.text) } : { attachment: part.attachment }),
    ...thread,
  }));
}

/** Whether `part` is a message (which a streamed preview can become), not a file. */
export function isMessagePart(part: SlackPart): part is SlackPostMessage {
  return 'text' in part;
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
