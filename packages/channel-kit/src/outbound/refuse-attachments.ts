import { type Attachment, type Reply, SwitchboardError } from '@switchboard/core';

/**
 * Why a channel cannot send `attachment` (a sentence naming the platform's rule), or `undefined`
 * when it can.
 */
export type AttachmentRefusal = (attachment: Attachment) => string | undefined;

/**
 * Throws a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED, before any call, when `replies` carry an
 * attachment the channel cannot send: those `refusal` gives a reason for, each named
 * (`replies[0].attachments[1]`) with its reason. The whole delivery fails (a `delivery_failed`
 * dead letter naming why) rather than post the rest and drop those files unseen; a replay then
 * sends every reply once.
 */
export function refuseAttachments(
  replies: readonly Reply[],
  where: { type: string; channelId: string },
  refusal: AttachmentRefusal,
): void {
  const refused = replies.flatMap((reply, index) =>
    (reply.attachments ?? []).flatMap((attachment, position) => {
      const reason = refusal(attachment);
      return reason === undefined
        ? []
        : [{ reply: index, attachment: position, type: attachment.type, reason }];
    }),
  );
  if (refused.length === 0) return;
  const named = refused.map(
    (entry) => `replies[${entry.reply}].attachments[${entry.attachment}] (${entry.type}): ${entry.reason}`,
  );
  throw new SwitchboardError('SB_CHANNEL_ATTACHMENTS_UNSUPPORTED', {
    message: `${where.type} channel "${where.channelId}" cannot send ${named.join('; ')}`,
    details: { channel: where.channelId, refused },
  });
}
