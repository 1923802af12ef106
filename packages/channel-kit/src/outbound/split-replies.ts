import { type Attachment, type Reply, splitText } from '@switchboard/core';

/** One platform message of a reply. */
export interface ReplyPart {
  text: string;
  /** Its place among the parts of its reply: 0 for the first (Discord makes each one a reply). */
  part: number;
}

/** One platform message of a reply that may carry attachments: a file of it, or a part of its text. */
export type MediaReplyPart = ReplyPart | { attachment: Attachment; part: number };

/**
 * The texts of `replies` cut to platform messages of at most `limit` UTF-16 code units (core's
 * `splitText`), in order; empty and blank replies give none, as platforms refuse empty messages.
 */
export function splitReplies(replies: readonly Reply[], limit: number): ReplyPart[] {
  return replies.flatMap((reply) => splitText(reply.text ?? '', limit).map((text, part) => ({ text, part })));
}

/**
 * Like `splitReplies`, with each reply's attachments before its text, in the order the reply
 * lists them (docs/design.md §4 "Attachments"): a picture, then what is said about it.
 */
export function splitRepliesWithAttachments(replies: readonly Reply[], limit: number): MediaReplyPart[] {
  return replies.flatMap((reply) => {
    const files = (reply.attachments ?? []).map((attachment, part) => ({ attachment, part }));
    const texts = splitText(reply.text ?? '', limit).map((text, part) => ({
      text,
      part: files.length + part,
    }));
    return [...files, ...texts];
  });
}
