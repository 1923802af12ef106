import { deliveryKey } from '@switchboard/channel-kit';

/** Where an activity came from and is answered: its connector, conversation and id. */
export interface ActivityRef {
  serviceUrl: string;
  /** The conversation id as it came (with `;messageid=` in a channel's reply chain). */
  conversationId: string;
  activityId: string;
}

/**
 * The `platform_message_id` of a Teams message: `<serviceUrl>:<conversation id>:<activity id>`,
 * each part escaped as the kit's `deliveryKey` does. It is the redelivery key, and what a reply
 * needs: the outbox keeps a message without its `raw` activity, so the reply target travels here.
 */
export function activityRefKey(ref: ActivityRef): string {
  return deliveryKey(ref.serviceUrl, ref.conversationId, ref.activityId);
}

/** `deliveryKey`'s escaping undone: only `%25` and `%3A` occur, so the colons go first. */
function unescapePart(part: string): string {
  return part.replaceAll('%3A', ':').replaceAll('%25', '%');
}

/** The activity a `platform_message_id` names; `null` when it is not one of `activityRefKey`. */
export function parseActivityRefKey(key: string): ActivityRef | null {
  const parts = key.split(':');
  if (parts.length !== 3 || parts.some((part) => part === '')) return null;
  const [serviceUrl, conversationId, activityId] = parts.map(unescapePart) as [string, string, string];
  return { serviceUrl, conversationId, activityId };
}
