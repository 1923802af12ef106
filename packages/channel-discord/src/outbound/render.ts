import { splitReplies } from '@switchboard/channel-kit';
import type { InboundMessage, Reply } from '@switchboard/core';

/** Discord refuses message content longer than this (UTF-16 units are a safe upper bound). */
export const DISCORD_MESSAGE_LIMIT = 2000;

/** The JSON body of `POST /channels/:id/messages` as the channel sends it. */
export interface DiscordMessageBody {
  content: string;
  /** Makes the message a reply; absent on the follow-up parts of a long reply. */
  message_reference?: { message_id: string; fail_if_not_exists: false };
  allowed_mentions: { parse: ['users']; replied_user: true };
}

/** One platform message to post: where, and what. */
export interface RenderedMessage {
  channelId: string;
  body: DiscordMessageBody;
}

/**
 * The Discord messages that answer `origin` with `replies`: posted in the origin's channel, or
 * its thread (a thread is a channel of its own for the API), each reply split at Discord's 2 000
 * characters, and each reply's first part a message reply to the origin (to the message an event
 * is about). Empty replies are
 * skipped: Discord refuses empty content.
 */
export function renderReplies(origin: InboundMessage, replies: readonly Reply[]): RenderedMessage[] {
  const channelId = origin.chat.thread ?? origin.chat.id;
  // An event's own id names the event; the reply answers the message it is about.
  const repliedTo = origin.event?.message_id ?? origin.platform_message_id;
  return splitReplies(replies, DISCORD_MESSAGE_LIMIT).map(({ text: content, part }) => ({
    channelId,
    body: {
      content,
      ...(part === 0
        ? {
            message_reference: { message_id: repliedTo, fail_if_not_exists: false as const },
          }
        : {}),
      // Pipelines echo user text: never let it ping @everyone, @here or a role.
      allowed_mentions: { parse: ['users'], replied_user: true },
    },
  }));
}
