import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError } from '@switchboard/core';
import { z } from 'zod';

const AccountSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  role: z.string().optional(),
});

/** A channel conversation id names the reply chain of a post after this marker. */
export const THREAD_MARKER = ';messageid=';

/** The fields of a Bot Framework `message` activity the channel reads; the rest is kept as it came. */
export const MessageActivitySchema = z.looseObject({
  type: z.literal('message'),
  id: z.string().min(1),
  serviceUrl: z.url({ protocol: /^https?$/ }),
  from: AccountSchema,
  recipient: AccountSchema,
  conversation: z.looseObject({
    id: z
      .string()
      .min(1)
      .refine(
        (id) => !id.startsWith(THREAD_MARKER),
        `names a reply chain (${THREAD_MARKER}) of no conversation`,
      ),
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
        /** What the content type says more; a shared file's `downloadUrl` (`normalize.ts`). */
        content: z.unknown().optional(),
      }),
    )
    .optional(),
});

/** A `message` activity. */
export type MessageActivity = z.output<typeof MessageActivitySchema>;

/** The Bot Framework's `channelId` of activities from Teams. */
export const TEAMS_CHANNEL_ID = 'msteams';

/**
 * What comes in: a Teams message, or an activity to acknowledge and ignore: of another type
 * (typing, conversationUpdate…), or from another Bot Framework channel (`channelId`, `null` when
 * absent).
 */
export type Activity = { message: MessageActivity } | { other: string; channelId: string | null };

function badRequest(path: string, problem: string): SwitchboardError {
  return new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `${path}: ${problem}`, details: { path } });
}

/**
 * Reads an authenticated request body: a JSON object with a string `type`; only activities of
 * `channelId: msteams` are taken, since the connector signs those of every channel of the Azure
 * Bot and a Web Chat or Direct Line client sets `from.id` itself (it could pose as a Teams user).
 * A Teams `message` activity must carry every field the channel reads. Throws
 * SB_HTTP_BAD_REQUEST naming the first bad field.
 */
export function parseActivity(rawBody: string): Activity {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw badRequest('body', parsed.problem);
  const { type, channelId } = parsed.value;
  if (typeof type !== 'string') throw badRequest('body.type', 'expected a string');
  if (channelId !== TEAMS_CHANNEL_ID) {
    return { other: type, channelId: typeof channelId === 'string' ? channelId : null };
  }
  if (type !== 'message') return { other: type, channelId };
  const message = MessageActivitySchema.safeParse(parsed.value);
  if (message.success) return { message: message.data };
  const [issue] = message.error.issues;
  throw badRequest(['body', ...(issue?.path ?? [])].join('.'), issue?.message ?? 'invalid');
}
