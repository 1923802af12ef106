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
 * characters, and each reply's first part a message reply to the origin. Empty replies are
 * skipped: Discord refuses empty content.
 */
export function renderReplies(origin: InboundMessage, replies: readonly Reply[]): RenderedMessage[] {
  const channelId = origin.chat.thread ?? origin.chat.id;
  return replies.flatMap((reply) =>
    splitText(reply.text).map((content, part) => ({
      channelId,
      body: {
        content,
        ...(part === 0
          ? {
              message_reference: {
                message_id: origin.platform_message_id,
                fail_if_not_exists: false as const,
              },
            }
          : {}),
        // Pipelines echo user text: never let it ping @everyone, @here or a role.
        allowed_mentions: { parse: ['users'], replied_user: true },
      },
    })),
  );
}

/**
 * Splits `text` into parts of at most `limit` UTF-16 units, preferring a line break, then a space
 * in the second half of each window, and never cutting a surrogate pair. Whitespace-only parts
 * are dropped.
 */
export function splitText(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    const breakAt = [window.lastIndexOf('\n'), window.lastIndexOf(' ')].find((index) => index >= limit / 2);
    if (breakAt !== undefined) {
      parts.push(rest.slice(0, breakAt));
      rest = rest.slice(breakAt + 1);
    } else {
      const cut = isHighSurrogate(rest.charCodeAt(limit - 1)) ? limit - 1 : limit;
      parts.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
  }
  parts.push(rest);
  return parts.filter((part) => part.trim() !== '');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
