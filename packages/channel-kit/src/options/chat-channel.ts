import { type ChannelPolicy, GroupPolicySchema } from '@switchboard/core';
import { z } from 'zod';
import { ChannelIdSchema } from './channel-id.js';
import { MediaOptionsSchema } from './media.js';

/**
 * Keys every chat platform channel shares: how groups are admitted, sessions keyed, and the
 * files its messages carry served.
 */
export const chatChannelFields = {
  id: ChannelIdSchema,
  group: GroupPolicySchema.prefault({}),
  session_scope: z.enum(['chat', 'thread']).default('chat'),
  media: MediaOptionsSchema.prefault({}),
};

/** The parsed `group` and `session_scope` of a chat channel as core's `ChannelPolicy`. */
export function policyOf(channel: {
  group: z.output<typeof GroupPolicySchema>;
  session_scope: 'chat' | 'thread';
}): ChannelPolicy {
  return { admission: channel.group, sessionScope: channel.session_scope };
}
