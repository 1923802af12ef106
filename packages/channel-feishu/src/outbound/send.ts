import { type MessageCalls, retryKeyOf, splitRepliesWithAttachments } from '@switchboard/channel-kit';
import {
  type Attachment,
  type InboundMessage,
  type Reply,
  type SendPacer,
  isSwitchboardError,
  pacedChatOf,
} from '@switchboard/core';
import { type EditCounts, MAX_EDITS } from './edit-counts.js';
import type { FeishuApi } from './open-api.js';
import { uploadFeishuFile } from './upload-file.js';

/**
 * Characters of one text message. Feishu caps a text message's request at 150 KB; 30 000 UTF-16
 * units stay under it even at 4 bytes each once escaped twice (the content is JSON in JSON).
 */
export const MAX_TEXT_CHARS = 30_000;

/** One text message of a reply, and the idempotency key Feishu deduplicates a re-sent part by. */
export interface FeishuText {
  text: string;
  uuid?: string;
}

/** One file message of a reply: the attachment, uploaded when it is sent. */
export interface FeishuFile {
  attachment: Attachment;
  uuid?: string;
}

/** One message of a reply. */
export type FeishuPart = FeishuText | FeishuFile;

/** Whether `part` is a text message, which a streamed preview can become. */
const isText = (part: FeishuPart): part is FeishuText => 'text' in part;

/**
 * The messages of `replies`: each reply's attachments, then its text in Feishu's limit. With
 * `answering` (the turn, else the message answered) each carries a `uuid` made of it, its place
 * and what it shows (a text, an attachment's url or data), so that a re-sent part shows once: a
 * file uploaded again on a retry gets another key, and its message the same uuid.
 */
export function renderFeishuReplies(replies: readonly Reply[], answering?: string): FeishuPart[] {
  return splitRepliesWithAttachments(replies, MAX_TEXT_CHARS).map((part, index) => {
    const shown = 'text' in part ? part.text : JSON.stringify(part.attachment);
    const uuid = answering === undefined ? {} : { uuid: retryKeyOf(answering, index, [shown]) };
    return 'text' in part ? { text: part.text, ...uuid } : { attachment: part.attachment, ...uuid };
  });
}

/**
 * An edit Feishu refuses for good: past the message's 20 edits (code 230072), past the tenant's
 * edit window, or of a message deleted meanwhile. Not a rate limit, a refused token or an outage,
 * which the outbox retries.
 */
const isEditRefused = (error: unknown) =>
  isSwitchboardError(error, 'SB_CHANNEL_SEND_FAILED') && !error.retryable;

/** `GET /open-apis/im/v1/messages/:message_id`: a text message's `content` is `{"text": …}` as JSON. */
interface DraftAnswer {
  data?: { items?: Array<{ body?: { content?: unknown } }> };
}

/** Options of `feishuMessageCalls`. */
export interface FeishuMessageCallsOptions {
  api: FeishuApi;
  pacer: SendPacer;
  signal: AbortSignal;
  /** The channel's count of edits per message. */
  edits: EditCounts;
  /** `preview` edits the draft while edits are left; `answer` shows the final text. */
  purpose: 'preview' | 'answer';
  /** `outbound.allow_private_urls`: whether a url attachment may lead to a private address. */
  allowPrivateUrls: boolean;
  /** The configured channel id, for errors. */
  channelId: string;
}

/**
 * Replies to `origin` (a reply to a message in a topic lands in the topic: the queued origin keeps
 * no platform event to tell) and edits the bot's text messages, paced per chat. A file is
 * uploaded first (`upload-file.ts`), then replied with as an image, file or audio message.
 *
 * Feishu edits a message 20 times at most: previews stop editing a draft after 19, which keeps
 * the last edit for the answer. Should that edit be refused all the same (edits this process did
 * not count, before a restart; the tenant's edit window passed; the draft deleted), the answer is
 * posted as a new reply instead, unless the draft shows it already: the outbox's retry of a send
 * whose edit applied but whose answer was lost (a timeout) meets the cap that edit spent.
 */
export function feishuMessageCalls(
  origin: InboundMessage,
  options: FeishuMessageCallsOptions,
): MessageCalls<FeishuPart> {
  const { api, pacer, signal, edits, purpose } = options;
  const chat = pacedChatOf(origin);
  const messageUrl = (id: string) => `/open-apis/im/v1/messages/${encodeURIComponent(id)}`;
  const content = (text: string) => JSON.stringify({ text });
  async function update(text: string, ref: string) {
    await pacer.pace(chat, signal);
    await api.call(
      'im.message.update',
      { method: 'PUT', url: messageUrl(ref), data: { msg_type: 'text', content: content(text) } },
      signal,
    );
  }

  /**
   * Whether the draft `ref` shows `text` already: an earlier attempt's edit that reached Feishu
   * though its answer was lost. A draft that cannot be read for good does not show it.
   */
  async function shows(ref: string, text: string): Promise<boolean> {
    // Not paced: reading a message is not one of the chat's 5 messages a second.
    let answer: DraftAnswer;
    try {
      answer = await api.call<DraftAnswer>('im.message.get', { method: 'GET', url: messageUrl(ref) }, signal);
    } catch (error) {
      // Refused for good (deleted, a scope the app lacks): post rather than lose the answer.
      if (isSwitchboardError(error) && error.retryable !== true) return false;
      throw error;
    }
    const shown = answer.data?.items?.[0]?.body?.content;
    if (typeof shown !== 'string') return false;
    try {
      return (JSON.parse(shown) as { text?: unknown }).text === text;
    } catch {
      return false;
    }
  }

  const calls: MessageCalls<FeishuPart> = {
    async post(part) {
      const { msgType, content: shown } = isText(part)
        ? { msgType: 'text', content: content(part.text) }
        : await uploadFeishuFile(part.attachment, options);
      await pacer.pace(chat, signal);
      const answer = await api.call<{ data?: { message_id?: string } }>(
        'im.message.reply',
        {
          method: 'POST',
          url: `${messageUrl(origin.platform_message_id)}/reply`,
          data: { msg_type: msgType, content: shown, uuid: part.uuid },
        },
        signal,
      );
      return answer.data?.message_id ?? '';
    },
    editable: isText,
    async edit(part, ref) {
      // `sendParts` and `showPreview` edit with a text only (`editable`).
      const message = part as FeishuText;
      if (purpose === 'preview') {
        if (edits.of(ref) >= MAX_EDITS - 1) return;
        await update(message.text, ref);
        edits.add(ref);
        return;
      }
      try {
        await update(message.text, ref);
      } catch (error) {
        if (!isEditRefused(error)) throw error;
        // A retry after a lost answer: the edit applied, then the cap refused this one.
        if (await shows(ref, message.text)) return;
        await calls.post(message);
      } finally {
        edits.forget(ref);
      }
    },
  };
  return calls;
}
