import {
  AUTHORIZED,
  type Disposition,
  mountWebhook,
  parseJsonObject,
  webhookPath,
} from '@switchboard/channel-kit';
import { type Logger, SwitchboardError } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import type { Update } from 'grammy/types';
import { parseUpdate } from './parse-update.js';
import { SECRET_TOKEN_HEADER, secretTokenVerifier } from './verify.js';

export interface TelegramWebhookOptions {
  server: FastifyInstance;
  channelId: string;
  /** `channels[].webhook.secret_token`: Telegram sends it back in every call. */
  secretToken: string;
  logger: Logger;
  /** Takes one update to the ingress; `null` while the channel is not running. */
  handler: () => ((update: Update) => Promise<Disposition>) | null;
}

/** A webhook body read as an `Update`, or SB_HTTP_BAD_REQUEST naming what is wrong. */
function readUpdate(rawBody: string): Update {
  const parsed = parseJsonObject(rawBody);
  if (!parsed.ok) throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: `body: ${parsed.problem}` });
  return parseUpdate(parsed.value);
}

/**
 * Mounts `POST /telegram/<channel id>` (docs/design.md §3 "telegram"). The secret token is checked
 * before the body is even read: 401 without it, and nothing is queued. The answer waits for
 * the ingress, so 200 means journaled (or final: duplicate, ignored, unsupported). Telegram
 * redelivers anything else, so a refused update (full queue, draining) and any call before
 * start or after stop get 503; a body that is not an Update gets 400.
 */
export function mountTelegramWebhook(options: TelegramWebhookOptions): void {
  const { channelId } = options;
  const verify = secretTokenVerifier(options.secretToken);
  mountWebhook(options.server, {
    path: webhookPath('telegram', channelId),
    name: `telegram channel "${channelId}"`,
    logger: options.logger,
    authorize: (headers) =>
      verify(headers[SECRET_TOKEN_HEADER])
        ? AUTHORIZED
        : { refused: 'X-Telegram-Bot-Api-Secret-Token is missing or does not match webhook.secret_token' },
    parse: readUpdate,
    handler: options.handler,
  });
}
