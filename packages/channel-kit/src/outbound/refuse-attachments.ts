import { type Reply, SwitchboardError } from '@switchboard/core';

/**
 * Throws a final SB_CHANNEL_ATTACHMENTS_UNSUPPORTED, before any call, when `replies` carry an
 * attachment: a channel that cannot send files yet fails the whole delivery (a `delivery_failed`
 * dead letter naming why) rather than post the texts and drop the files unseen; a replay then
 * sends every reply once.
 */
export function refuseAttachments(
  replies: readonly Reply[],
  where: { type: string; channelId: string },
): void {
  const index = replies.findIndex((reply) => (reply.attachments?.length ?? 0) > 0);
  if (index === -1) return;
  throw new SwitchboardError('SB_CHANNEL_ATTACHMENTS_UNSUPPORTED', {
    message: `${where.type} channel "${where.channelId}" cannot send attachments yet: replies[${index}] carries ${replies[index]?.attachments?.length}`,
    details: { channel: where.channelId, reply: index },
  });
}
