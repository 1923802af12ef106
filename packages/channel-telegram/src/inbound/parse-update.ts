import { SwitchboardError, formatIssues } from '@switchboard/core';
import type { Update } from 'grammy/types';
import { z } from 'zod';

// The fields the normalizer reads. Objects are loose: Telegram adds fields with every Bot API
// version, and they pass through untouched.
const EntitySchema = z.looseObject({ type: z.string(), offset: z.int(), length: z.int() });
const FileSchema = z.looseObject({ file_id: z.string() });

const MessageSchema = z.looseObject({
  message_id: z.int(),
  date: z.int(),
  chat: z.looseObject({ id: z.int(), type: z.string() }),
  from: z.looseObject({ id: z.int(), is_bot: z.boolean() }).optional(),
  sender_chat: z.looseObject({ id: z.int() }).optional(),
  text: z.string().optional(),
  caption: z.string().optional(),
  entities: z.array(EntitySchema).optional(),
  caption_entities: z.array(EntitySchema).optional(),
  message_thread_id: z.int().optional(),
  photo: z.array(z.unknown()).optional(),
  voice: FileSchema.optional(),
  document: FileSchema.optional(),
  reply_to_message: z
    .looseObject({ message_id: z.int(), from: z.looseObject({ id: z.int() }).optional() })
    .optional(),
});

const ReactionSchema = z.looseObject({ type: z.string() });

const MessageReactionSchema = z.looseObject({
  chat: z.looseObject({ id: z.int(), type: z.string() }),
  message_id: z.int(),
  date: z.int(),
  user: z.looseObject({ id: z.int(), is_bot: z.boolean() }).optional(),
  actor_chat: z.looseObject({ id: z.int() }).optional(),
  old_reaction: z.array(ReactionSchema),
  new_reaction: z.array(ReactionSchema),
});

const UpdateSchema = z.looseObject({
  update_id: z.int(),
  message: MessageSchema.optional(),
  edited_message: MessageSchema.extend({ edit_date: z.int().optional() }).optional(),
  message_reaction: MessageReactionSchema.optional(),
});

/**
 * Checks that a webhook body is a Telegram `Update` with the fields the channel reads and
 * returns it as it came. Reports every problem at once, one `body.<path>: problem` per line, as
 * an SB_HTTP_BAD_REQUEST (400) — a malformed body must never crash the process.
 */
export function parseUpdate(body: unknown): Update {
  const result = UpdateSchema.safeParse(body);
  if (!result.success) {
    const problems = formatIssues(result.error, ['body']);
    throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
      message: `invalid Telegram update: ${problems.join('; ')}`,
      details: { problems },
    });
  }
  return body as Update;
}
