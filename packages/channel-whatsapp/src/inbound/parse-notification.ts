import { parseJsonObject } from '@switchboard/channel-kit';
import { SwitchboardError, formatIssues, parseOrThrow } from '@switchboard/core';
import { z } from 'zod';

/** The part of a `messages` change the channel reads; statuses and errors are left unread. */
const MessagesValueSchema = z.looseObject({
  metadata: z.looseObject({
    phone_number_id: z.string().min(1),
    display_phone_number: z.string().optional(),
  }),
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
  /** The business number's digits (`display_phone_number`): a message from it is the business's own. */
  businessNumber: string | undefined;
  /** The sender's profile name by WhatsApp id. */
  names: ReadonlyMap<string, string>;
  messages: unknown[];
}

/** A notification as read: its `messages` changes, and why each unreadable one was skipped. */
export interface Notification {
  changes: MessagesChange[];
  /** One problem per malformed change, naming it (`entry[0].changes[1]: …`). */
  skipped: string[];
}

/**
 * Reads a verified webhook notification: a `whatsapp_business_account` object whose
 * `entry[].changes[]` of field `messages` become `MessagesChange`s, in order. Changes of other
 * fields (template and quality updates) are left out; so are delivery `statuses`, which share
 * the `messages` field with messages. A malformed change is skipped, named in `skipped`, so that
 * the messages of the others are taken. Throws SB_HTTP_BAD_REQUEST naming the problem when the
 * notification itself is malformed. Pure.
 */
export function parseNotification(rawBody: string): Notification {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${parsed.problem}` });
  const notification = parseOrThrow(NotificationSchema, parsed.value, 'SB_HTTP_BAD_REQUEST', 'body');
  const read: Notification = { changes: [], skipped: [] };
  for (const [entryIndex, entry] of notification.entry.entries()) {
    for (const [changeIndex, change] of entry.changes.entries()) {
      if (change.field !== 'messages') continue;
      const value = MessagesValueSchema.safeParse(change.value);
      if (!value.success) {
        const where = ['entry', entryIndex, 'changes', changeIndex, 'value'];
        read.skipped.push(formatIssues(value.error, where).join('; '));
        continue;
      }
      const { metadata, contacts, messages } = value.data;
      read.changes.push({
        phoneNumberId: metadata.phone_number_id,
        businessNumber: metadata.display_phone_number?.replace(/\D/g, '') || undefined,
        names: new Map(contacts.flatMap((c) => (c.profile ? [[c.wa_id, c.profile.name]] : []))),
        messages,
      });
    }
  }
  return read;
}
