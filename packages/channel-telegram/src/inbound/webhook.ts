import { type ErrorCode, SwitchboardError } from '@switchboard/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Update } from 'grammy/types';
import { parseUpdate } from './parse-update.js';
import type { UpdateDisposition } from './polling.js';
import { SECRET_TOKEN_HEADER, secretTokenVerifier } from './verify.js';

export interface WebhookRouteOptions {
  server: FastifyInstance;
  channelId: string;
  /** `channels[].webhook.secret_token`: Telegram sends it back in every call. */
  secretToken: string;
  /** Takes one update to the ingress; `null` while the channel is not running. */
  handler: () => ((update: Update) => Promise<UpdateDisposition>) | null;
}

/** Telegram retries a webhook call that did not answer 2xx; Retry-After tells proxies the same. */
const NOT_RUNNING_RETRY_AFTER_MS = 1_000;

/** The route of a channel's webhook: `/telegram/<channel id>`. */
export function webhookPath(channelId: string): string {
  return `/telegram/${encodeURIComponent(channelId)}`;
}

function unavailable(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  retryAfterMs: number,
): FastifyReply {
  return reply
    .code(503)
    .header('retry-after', String(Math.max(1, Math.ceil(retryAfterMs / 1000))))
    .send({ error: { code, message } });
}

/**
 * Mounts `POST /telegram/<channel id>` (docs/design.md §3 "telegram"). The secret token is checked
 * before the body is even parsed: 401 without it, and nothing is queued. The answer waits for
 * the ingress, so 200 means journaled (or final: duplicate, ignored, unsupported). Telegram
 * redelivers anything else, so a refused update (full queue, draining) and any call before
 * start or after stop get 503; a body that is not an Update gets 400.
 */
export function mountWebhook(options: WebhookRouteOptions): void {
  const { server, channelId } = options;
  const verify = secretTokenVerifier(options.secretToken);
  server.post(
    webhookPath(channelId),
    {
      onRequest: async (request) => {
        if (!verify(request.headers[SECRET_TOKEN_HEADER])) {
          throw new SwitchboardError('SB_HTTP_UNAUTHORIZED', {
            message: 'X-Telegram-Bot-Api-Secret-Token is missing or does not match webhook.secret_token',
          });
        }
      },
    },
    async (request, reply) => {
      const handle = options.handler();
      if (handle === null) {
        return unavailable(
          reply,
          'SB_DRAINING',
          `telegram channel "${channelId}" is not running`,
          NOT_RUNNING_RETRY_AFTER_MS,
        );
      }
      const disposition = await handle(parseUpdate(request.body));
      if (!disposition.acknowledge) {
        const code = disposition.reason === 'draining' ? 'SB_DRAINING' : 'SB_QUEUE_FULL';
        return unavailable(
          reply,
          code,
          `update refused (${disposition.reason}); Telegram will redeliver it`,
          disposition.retryAfterMs,
        );
      }
      return reply.code(200).send();
    },
  );
}
