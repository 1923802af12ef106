import { splitRepliesWithAttachments } from '@switchboard/channel-kit';
import type { Attachment, InboundMessage, Reply } from '@switchboard/core';

/** Discord refuses message content longer than this (UTF-16 units are a safe upper bound). */
export const DISCORD_MESSAGE_LIMIT = 2000;

/** The JSON body of `POST /channels/:id/messages` as the channel sends it. */
export interface DiscordMessageBody {
  content: string;
  /** Makes the message a reply; absent on the follow-up parts of a long reply. */
  message_reference?: { message_id: string; fail_if_not_exists: false };
  allowed_mentions: { parse: ['users']; replied_user: true };
}

/** One platform message to post: where, and what (a text, or a file with no content). */
export interface RenderedMessage {
  channelId: string;
  body: DiscordMessageBody;
  /** The file the message uploads (multipart `files[0]`); its content is then empty. */
  attachment?: Attachment;
}

/**
 * The Discord messages that answer `origin` with `replies`: posted in the origin's channel, or
 * its thread (a thread is a channel of its own for the API); each reply's files as it lists them,
 * one message each, then its text split at Discord's 2 000 characters; each reply's first
 * message a message reply to the origin (to the message an event is about). Empty texts are
 * skipped: Discord refuses empty content.
 */
export function renderReplies(origin: InboundMessage, replies: readonly Reply[]): RenderedMessage[] {
  const channelId = origin.chat.thread ?? origin.chat.id;
  // An event's own id names the event; the reply answers the message it is about.
  const repliedTo = origin.event?.message_id ?? origin.platform_message_id;
  return splitRepliesWithAttachments(replies, DISCORD_MESSAGE_LIMIT).map((message) => ({
    channelId,
    body: {
      content: 'text' in message ? message.text : '',
      ...(message.part === 0
        ? {
            message_reference: { message_id: repliedTo, fail_if_not_exists: false as const },
          }
        : {}),
      // Pipelines echo user text: never let it ping @everyone, @here or a role.
      allowed_mentions: { parse: ['users'], replied_user: true },
    },
    ...('attachment' in message ? { attachment: message.attachment } : {}),
  }));
}
