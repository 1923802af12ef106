import { type MessageCalls, requestPlatform } from '@switchboard/channel-kit';
import {
  type InboundMessage,
  type PacedChat,
  type SendPacer,
  SwitchboardError,
  isSwitchboardError,
  pacedChatOf,
} from '@switchboard/core';
import { type ActivityRef, parseActivityRefKey } from '../activity-ref.js';
import type { AccessTokens } from './access-token.js';
import { type TeamsPart, messageActivityOf } from './render.js';

/** The activity a reply to `origin` answers, from its `platform_message_id`. */
export function replyTargetOf(origin: InboundMessage): ActivityRef {
  const ref = parseActivityRefKey(origin.platform_message_id);
  if (ref === null) {
    throw new SwitchboardError('SB_CHANNEL_SEND_FAILED', {
      message: `teams channel "${origin.channel}": platform_message_id of message ${origin.id} names no Teams activity to reply to`,
    });
  }
  return ref;
}

/** What the connector calls of one send share. */
export interface ConnectorOptions {
  channelId: string;
  tokens: AccessTokens;
  pacer: SendPacer;
  /** Told of each 429, with its Retry-After in ms. */
  onRateLimited: (retryAfterMs: number) => void;
  /** How long the connector has to answer one call, ms. */
  timeoutMs: number;
}

/**
 * The Bot Connector calls of one send or preview into `origin`'s conversation: a post is a reply
 * to the origin's activity (`POST …/activities/{activityId}`, which keeps a channel's reply
 * chain), an edit replaces the bot's activity (`PUT …/activities/{id}`); a text can edit, an
 * image is only posted. Each waits for the
 * pacer, then carries a client-credentials token; a refused token is forgotten, so that the next
 * call fetches a new one. Failures are the kit's SB_CHANNEL_* errors without password or token.
 */
export function connectorCalls(
  origin: InboundMessage,
  signal: AbortSignal,
  options: ConnectorOptions,
): MessageCalls<TeamsPart> {
  const target = replyTargetOf(origin);
  const chat: PacedChat = pacedChatOf(origin);
  const base = `${target.serviceUrl.replace(/\/+$/, '')}/v3/conversations/${encodeURIComponent(target.conversationId)}/activities`;

  async function call(method: 'POST' | 'PUT', activityId: string, part: TeamsPart): Promise<unknown> {
    await options.pacer.pace(chat, signal);
    const token = await options.tokens.get(signal);
    const path = `${method === 'POST' ? 'reply' : 'update'} ${activityId}`;
    try {
      return await requestPlatform({
        where: {
          type: 'teams',
          channelId: options.channelId,
          call: `${method} /v3/conversations/…/activities (${path})`,
        },
        method,
        url: `${base}/${encodeURIComponent(activityId)}`,
        headers: { authorization: `Bearer ${token}` },
        body: {
          ...messageActivityOf(part),
          ...(method === 'PUT' ? { id: activityId } : { replyToId: activityId }),
        },
        timeoutMs: options.timeoutMs,
        signal,
        secrets: options.tokens.secrets(),
        credentialPath: `channels[${options.channelId}].app_password`,
      });
    } catch (error) {
      if (isSwitchboardError(error, 'SB_CHANNEL_AUTH_FAILED')) options.tokens.forget(token);
      if (isSwitchboardError(error, 'SB_CHANNEL_RATE_LIMITED') && error.retryAfterMs !== undefined) {
        options.onRateLimited(error.retryAfterMs);
      }
      throw error;
    }
  }

  return {
    async post(part) {
      const answer = (await call('POST', target.activityId, part)) as { id?: unknown } | undefined;
      // The connector answers a ResourceResponse `{ id }`: the ref a preview's edits need.
      return typeof answer?.id === 'string' ? answer.id : '';
    },
    async edit(part, ref) {
      await call('PUT', ref, part);
    },
    editable: (part) => typeof part === 'string',
  };
}
