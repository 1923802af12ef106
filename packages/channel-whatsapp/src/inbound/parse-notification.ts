import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError, parseOrThrow } from '@switchboard/core';
import { z } from 'zod';

/** The part of a `messages` change the channel reads; statuses and errors are left unread. */
const MessagesValueSchema = z.looseObject({
  metadata: z.looseObject({ phone_number_id: z.string().min(1) }),
  contacts: z
    .array(z.looseObject({ wa_id: z.string(), profile: z.looseObject({ name: z.string() }).optional() }))
    .default([]),
  messages: z.array(z.unknown()).default([]),
});

const NotificationSchema = z.looseObject({
  object: z.literal('whatsapp_business_account'),
  entry: z.array(
    z.looseObject({ changes: z.array(z.looseObject({ field: z.string(), value: z.unknown() })) }),
  ),
});

/** The messages one change carries for one business phone number, each yet to be normalized. */
export interface MessagesChange {
  phoneNumberId: string;
  /** The sender's profile name by WhatsApp id. */
  names: ReadonlyMap<string, string>;
  messages: unknown[];
}

/**
 * Reads a verified webhook notification: a `whatsapp_business_account` object whose
 * `entry[].changes[]` of field `messages` become `MessagesChange`s, in order. Changes of other
 * fields (template and quality updates) are left out; so are delivery `statuses`, which share
 * the `messages` field with messages. Throws SB_HTTP_BAD_REQUEST naming the problem. Pure.
 */
export function parseNotification(rawBody: string): MessagesChange[] {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${parsed.problem}` });
  const notification = parseOrThrow(NotificationSchema, parsed.value, 'SB_HTTP_BAD_REQUEST', 'body');
  return notification.entry.flatMap((entry) =>
    entry.changes
      .filter((change) => change.field === 'messages')
      .map((change) => {
        const value = parseOrThrow(MessagesValueSchema, change.value, 'SB_HTTP_BAD_REQUEST', 'change value');
        return {
          phoneNumberId: value.metadata.phone_number_id,
          names: new Map(value.contacts.flatMap((c) => (c.profile ? [[c.wa_id, c.profile.name]] : []))),
          messages: value.messages,
        };
      }),
  );
}
