import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';
import { z } from 'zod';

const AccountSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  role: z.string().optional(),
});

/** The fields of a Bot Framework `message` activity the channel reads; the rest is kept as it came. */
export const MessageActivitySchema = z.looseObject({
  type: z.literal('message'),
  id: z.string().min(1),
  serviceUrl: z.url({ protocol: /^https?$/ }),
  from: AccountSchema,
  recipient: AccountSchema,
  conversation: z.looseObject({
    id: z.string().min(1),
    /** `personal`, `groupChat` or `channel` in Teams. */
    conversationType: z.string().optional(),
    isGroup: z.boolean().optional(),
  }),
  text: z.string().optional(),
  entities: z
    .array(
      z.looseObject({
        type: z.string(),
        mentioned: AccountSchema.optional(),
        text: z.string().optional(),
      }),
    )
    .optional(),
  attachments: z
    .array(
      z.looseObject({
        contentType: z.string(),
        contentUrl: z.string().optional(),
        name: z.string().optional(),
      }),
    )
    .optional(),
});

/** A `message` activity. */
export type MessageActivity = z.output<typeof MessageActivitySchema>;

/** What comes in: a message, or another activity (typing, conversationUpdate…) to acknowledge. */
export type Activity = { message: MessageActivity } | { other: string };

function badRequest(path: string, problem: string): SwitchboardError {
  return new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `${path}: ${problem}`, details: { path } });
}

/**
 * Reads an authenticated request body: a JSON object with a string `type`; a `message` activity
 * must carry every field the channel reads. Throws SB_HTTP_BAD_REQUEST naming the first bad field.
 */
export function parseActivity(rawBody: string): Activity {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw badRequest('body', parsed.problem);
  const { type } = parsed.value;
  if (typeof type !== 'string') throw badRequest('body.type', 'expected a string');
  if (type !== 'message') return { other: type };
  const message = MessageActivitySchema.safeParse(parsed.value);
  if (message.success) return { message: message.data };
  const [issue] = message.error.issues;
  throw badRequest(['body', ...(issue?.path ?? [])].join('.'), issue?.message ?? 'invalid');
}
