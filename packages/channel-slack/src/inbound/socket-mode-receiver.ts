import type { App, Logger as BoltLogger, Receiver, ReceiverEvent } from '@slack/bolt';
import { SocketModeClient } from '@slack/socket-mode';
import { type Logger, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import { DELIVERY_KEY, type Delivery, isLastSlackDelivery } from './delivery.js';
import { eventCallbackProblem } from './event-callback.js';

export interface SocketModeReceiverOptions {
  /** The app-level token (`xapp-…`) that opens the connection. */
  appToken: string;
  /** The Web API base for `apps.connections.open` (with the trailing slash); Slack's by default. */
  slackApiUrl: string | undefined;
  /** The configured channel id, for error messages. */
  channelId: string;
  /** For the Socket Mode client's own lines (reconnects). */
  boltLogger: BoltLogger;
  logger: Logger;
}

/** A Bolt `Receiver` over Socket Mode that exposes its client, so that health can follow the connection. */
export interface SocketModeReceiver extends Receiver {
  readonly client: SocketModeClient;
}

/**
 * Socket Mode (docs/design.md §3 "slack") that acknowledges an envelope only once the ingress has
 * journaled its message. Bolt's own SocketModeReceiver cannot: `App.processEvent` acks every
 * `events_api` envelope before the listeners run, and Slack redelivers only what was not acked,
 * so a message refused (queue full, draining) or not journaled (store down) would be lost without
 * an outcome. Here Bolt gets a no-op `ack` and the envelope is acked after `processEvent`: not
 * at all when ingress refused the message or failed, so Slack sends it again (`retry_attempt`,
 * deduplicated on the message like any redelivery). On Slack's last retry (`retry_attempt` 3)
 * the listener records such a message as dropped instead, and the envelope is acked. Malformed
 * events are acked and logged: sending them again would not make them readable.
 */
export function createSocketModeReceiver(options: SocketModeReceiverOptions): SocketModeReceiver {
  const { channelId, logger } = options;
  const client = new SocketModeClient({
    appToken: options.appToken,
    logger: options.boltLogger,
    clientOptions: options.slackApiUrl === undefined ? {} : { slackApiUrl: options.slackApiUrl },
  });
  let app: App | null = null;

  client.on(
    'slack_event',
    async (
      args: { ack: () => Promise<void>; envelope_id: string; body: Record<string, unknown> } & {
        retry_num?: number;
        retry_reason?: string;
      },
    ) => {
      const log = { envelopeId: args.envelope_id, retryNum: args.retry_num };
      const delivery: Delivery = { last: isLastSlackDelivery(args.retry_num) };
      const event: ReceiverEvent = {
        body: args.body,
        ...(args.retry_num === undefined ? {} : { retryNum: args.retry_num }),
        ...(args.retry_reason === undefined ? {} : { retryReason: args.retry_reason }),
        ack: async () => {},
        customProperties: { [DELIVERY_KEY]: delivery },
      };
      try {
        if (app === null) {
          throw new SwitchboardError('SB_DRAINING', {
            message: `slack channel "${channelId}" is not running`,
          });
        }
        // Bolt throws a TypeError on an event_callback it cannot route, which would leave it unacked.
        const problem = args.body.type === 'event_callback' ? eventCallbackProblem(args.body) : null;
        if (problem !== null) throw new SwitchboardError('SB_HTTP_BAD_REQUEST', { message: problem });
        await app.processEvent(event);
      } catch (err) {
        if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST')) {
          // The listener dropped what ingress failed on; this failed before ingress (the
          // channel stopping), where no outcome can be recorded and Slack will not retry.
          if (delivery.last) {
            logger.error({ ...log, err }, 'slack event lost on its last retry');
            return;
          }
          // Unacknowledged: if the process dies here too, Slack still holds the envelope.
          logger.warn({ ...log, err }, 'slack event not accepted, left unacknowledged for redelivery');
          return;
        }
        logger.warn({ ...log, err }, 'malformed slack event acknowledged');
      }
      const result = delivery.result;
      if (result?.status === 'refused' && delivery.dropped === undefined) {
        logger.warn(
          { ...log, reason: result.reason, retryAfterMs: result.retryAfterMs },
          'slack event refused, left unacknowledged for redelivery',
        );
        return;
      }
      try {
        await args.ack();
      } catch (err) {
        // The socket closed under us: Slack redelivers, and the journaled message is a duplicate.
        logger.warn({ ...log, err }, 'slack event not acknowledged');
      }
    },
  );

  return {
    client,
    init(boltApp) {
      app = boltApp;
    },
    async start() {
      return client.start();
    },
    async stop() {
      return client.disconnect();
    },
  };
}
