import { webApi } from '@slack/bolt';
import type { Logger } from '@switchboard/core';
import { toChannelError } from '../errors.js';
import type { SlackPostMessage } from './render.js';

export interface SendOptions {
  /** A client built with `rejectRateLimitedCalls: true`, so that a 429 comes back here. */
  client: webApi.WebClient;
  botToken: string;
  /** The configured channel id, for error messages. */
  channelId: string;
  /** How many times one message is retried after a 429. */
  maxRateLimitRetries: number;
  /** A longer Retry-After than this is not waited for: the error goes to the caller. */
  maxRateLimitWaitMs: number;
  logger: Logger;
  sleep?: (ms: number) => Promise<void>;
}

const METHOD = 'chat.postMessage';

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Posts `messages` in order. A 429 is waited out (Retry-After) and the same message retried, up to
 * `maxRateLimitRetries` times; anything else, or a rate limit that outlasts those retries, ends
 * the send with an SB_CHANNEL_* error (earlier messages stay posted). Network failures and 5xx
 * are retried by the client itself (its `retryConfig`).
 */
export async function postSlackMessages(
  messages: readonly SlackPostMessage[],
  options: SendOptions,
): Promise<void> {
  const sleep = options.sleep ?? defaultSleep;
  for (const message of messages) {
    for (let retries = 0; ; retries += 1) {
      try {
        await options.client.chat.postMessage({ token: options.botToken, ...message });
        break;
      } catch (error) {
        const waitMs = error instanceof webApi.WebAPIRateLimitedError ? error.retryAfter * 1000 : undefined;
        if (
          waitMs === undefined ||
          retries >= options.maxRateLimitRetries ||
          waitMs > options.maxRateLimitWaitMs
        ) {
          throw toChannelError(error, { channelId: options.channelId, method: METHOD });
        }
        options.logger.warn({ method: METHOD, waitMs, retry: retries + 1 }, 'rate limited, waiting');
        await sleep(waitMs);
      }
    }
  }
}
