import { type Reply, splitText } from '@switchboard/core';

/** One platform message of a reply. */
export interface ReplyPart {
  text: string;
  /** Its place among the parts of its reply: 0 for the first (Discord makes each one a reply). */
  part: number;
}

/**
 * The texts of `replies` cut to platform messages of at most `limit` UTF-16 code units (core's
 * `splitText`), in order; empty and blank replies give none, as platforms refuse empty messages.
 */
export function splitReplies(replies: readonly Reply[], limit: number): ReplyPart[] {
  return replies.flatMap((reply) => splitText(reply.text, limit).map((text, part) => ({ text, part })));
}
