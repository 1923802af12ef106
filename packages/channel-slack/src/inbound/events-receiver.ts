import type { IncomingHttpHeaders } from 'node:http';
import type { App, Receiver, ReceiverEvent } from '@slack/bolt';
import {
  ACKNOWLEDGED,
  type Disposition,
  dispositionOf,
  mountWebhook,
  webhookPath,
} from '@switchboard/channel-kit';
import { type Logger, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import type { FastifyInstance } from 'fastify';
import { DELIVERY_KEY, type Delivery, isLastSlackDelivery } from './delivery.js';
import { eventCallbackProblem } from './event-callback.js';
import { parseSlackBody } from './parse-body.js';
import { verifySlackSignature } from './verify.js';

export interface EventsReceiverOptions {
  /** The gateway's HTTP server; the route is added at once, in its own plugin scope. */
  server: FastifyInstance;
  /** The configured channel id; the route is `/slack/<channelId>/events`. */
  channelId: string;
  signingSecret: string;
  /** The longest the answer waits for the journal; Slack gives up after 3 s. */
  ackDeadlineMs: number;
  /** Clock for the timestamp check, ms since the epoch. */
  now: () => number;
  logger: Logger;
}

type Settled = { kind: 'processed' } | { kind: 'failed'; error: unknown } | { kind: 'late' };

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A Bolt `Receiver` for the Events API, mounted in the gateway's fastify server at
 * `POST /slack/<channel id>/events` (the channel kit's webhook route) instead of Bolt's own HTTP
 * server. It checks the request signature on the raw bytes (401 otherwise), answers
 * `url_verification`, refuses bodies that are not Events API callbacks (400), acknowledges
 * unreadable events (200, logged), hands the rest to `app.processEvent` and answers once the
 * listener's `ingress.accept` has resolved — so an acknowledged message is already journaled. A
 * refused message is answered 503 (500 when ingress failed) so that Slack retries, except on
 * Slack's last retry (`X-Slack-Retry-Num` 3), where the listener records it as dropped and the
 * answer is 200. Before `start` and after `stop` it answers 503.
 */
export function createEventsReceiver(options: EventsReceiverOptions): Receiver {
  const { channelId, signingSecret, ackDeadlineMs, now, logger } = options;
  let app: App | null = null;
  let running = false;

  async function handle(
    boltApp: App,
    body: Record<string, unknown>,
    headers: IncomingHttpHeaders,
  ): Promise<Disposition> {
    if (body.type === 'url_verification') return { acknowledge: true, body: { challenge: body.challenge } };
    if (body.type === 'ssl_check') return ACKNOWLEDGED;
    if (body.type === 'app_rate_limited') {
      logger.warn({ minuteRateLimited: body.minute_rate_limited }, 'slack is dropping events: rate limited');
      return ACKNOWLEDGED;
    }
    // Interactivity and slash commands have no listener here; Bolt could not even route a body
    // that is not a Slack callback at all (`{"name": "x"}` reads as an options request).
    if (body.type !== 'event_callback') {
      throw new SwitchboardError('SB_HTTP_BAD_REQUEST', {
        message: 'body.type: expected event_callback, url_verification, ssl_check or app_rate_limited',
        details: { path: 'body.type' },
      });
    }

    const retryNum = Number(header(headers, 'x-slack-retry-num') ?? 0);
    // Slack redelivers whatever is not answered 2xx, and a redelivery would be just as unreadable:
    // such an event is acknowledged and logged, never handed to ingress (it is no message yet).
    const acknowledgeMalformed = (problem: string) => {
      logger.warn({ eventId: body.event_id, retryNum, problem }, 'malformed slack event acknowledged');
      return ACKNOWLEDGED;
    };
    const unreadable = eventCallbackProblem(body);
    if (unreadable !== null) return acknowledgeMalformed(unreadable);
    const delivery: Delivery = { last: isLastSlackDelivery(retryNum) };
    const event: ReceiverEvent = {
      body,
      retryNum,
      retryReason: header(headers, 'x-slack-retry-reason'),
      // Bolt acks Events API requests itself before its listeners run. The HTTP answer waits
      // for the journal instead (below), so this ack only marks that Bolt is done with it.
      ack: async () => {},
      customProperties: { [DELIVERY_KEY]: delivery },
    };
    const processing: Promise<Settled> = boltApp.processEvent(event).then(
      () => ({ kind: 'processed' }),
      (error: unknown) => ({ kind: 'failed', error }),
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Settled>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'late' }), ackDeadlineMs);
    });
    const settled = await Promise.race([processing, deadline]).finally(() => clearTimeout(timer));

    if (settled.kind === 'failed') {
      // The normalizer's verdict on the fields it reads (`event.ts: expected a non-empty string`).
      if (isSwitchboardError(settled.error, 'SB_HTTP_BAD_REQUEST'))
        return acknowledgeMalformed(settled.error.message);
      // The listener dropped what ingress failed on; this failed before ingress (the channel
      // stopping under the event), where no outcome can be recorded and Slack will not retry.
      if (delivery.last) {
        logger.error({ err: settled.error, eventId: body.event_id }, 'slack event lost on its last retry');
      }
      throw settled.error;
    }
    if (settled.kind === 'late' && delivery.last) {
      // Slack will not send it again whatever the answer: the listener records its outcome when
      // the write ends (queued, or dropped if refused or failed).
      logger.warn({ ackDeadlineMs, retryNum }, 'slack event on its last retry not journaled in time');
      void processing.then((late) => {
        if (late.kind === 'failed') {
          logger.error({ err: late.error, eventId: body.event_id }, 'slack event lost on its last retry');
        }
      });
      return ACKNOWLEDGED;
    }
    if (settled.kind === 'late') {
      // Answering 200 now could lose the message if the journal write then fails; a 503 makes
      // Slack redeliver (X-Slack-Retry-Num), and if the slow write did succeed after all, the
      // redelivery is recognised as a duplicate. Correctness over a quiet retry.
      void processing.then((late) => {
        if (late.kind === 'failed') logger.warn({ err: late.error, retryNum }, 'late slack event failed');
      });
      logger.warn({ ackDeadlineMs, retryNum }, 'slack event not journaled in time, asking for redelivery');
      return {
        acknowledge: false,
        code: 'SB_STORE_UNAVAILABLE',
        message: `the event was not journaled within ${ackDeadlineMs} ms; Slack will redeliver it`,
        retryAfterMs: 1000,
      };
    }
    // docs/design.md §2: a full or draining queue answers webhooks 503 so that the platform retries;
    // on Slack's last retry the listener has recorded the message as dropped instead (200).
    const result = delivery.result;
    return result === undefined || delivery.dropped !== undefined ? ACKNOWLEDGED : dispositionOf(result);
  }

  mountWebhook(options.server, {
    path: `${webhookPath('slack', channelId)}/events`,
    name: `slack channel "${channelId}"`,
    logger,
    contentTypes: ['application/json', 'application/x-www-form-urlencoded'],
    verify: ({ headers, rawBody }) => {
      const problem = verifySlackSignature(
        signingSecret,
        {
          signature: header(headers, 'x-slack-signature'),
          timestamp: header(headers, 'x-slack-request-timestamp'),
          rawBody,
        },
        now(),
      );
      return problem === null ? null : `x-slack-signature: ${problem}`;
    },
    parse: (rawBody, headers) => parseSlackBody(rawBody, header(headers, 'content-type')),
    handler: () => {
      const boltApp = app;
      return running && boltApp !== null ? (body, headers) => handle(boltApp, body, headers) : null;
    },
  });

  return {
    init(boltApp) {
      app = boltApp;
    },
    async start() {
      running = true;
    },
    async stop() {
      running = false;
    },
  };
}
