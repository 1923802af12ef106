import * as lark from '@larksuiteoapi/node-sdk';
import type { Disposition } from '@switchboard/channel-kit';
import { type ChannelHealth, type Logger, SwitchboardError, isSwitchboardError } from '@switchboard/core';
import type { FeishuChannelConfig } from '../options.js';
import { toSdkLogger } from '../sdk-logger.js';
import type { FeishuBody } from './open-body.js';

/** Options of `createLongConnection`. */
export interface LongConnectionOptions {
  config: FeishuChannelConfig;
  logger: Logger;
  /** After a ping, how long without a frame before the connection is dropped and opened again. */
  pingTimeoutMs: number;
  /** After the SDK gave up (the endpoint refused, reconnects ran out), how long until it starts again. */
  restartAfterFailureMs: number;
  /** Takes one event body to the ingress; a rejection or a disposition not acknowledged has it sent again. */
  take: (body: FeishuBody) => Promise<Disposition>;
}

/** The long connection of one channel. */
export interface LongConnection {
  /** Connects, and reconnects whenever the connection drops or fails, until `stop`. Returns at once. */
  start(): void;
  stop(): void;
  /** Ready while connected. */
  health(): ChannelHealth;
}

/**
 * Events over the SDK's long connection (`WSClient`): it asks `/callback/ws/endpoint` (with the
 * app id and secret) where to connect, holds the WebSocket, pings and reconnects (also when no
 * frame follows a ping within `pingTimeoutMs`: a far end gone without closing). Each event is
 * answered once `take` has settled: `code: 200` when the ingress took it (journaled, a duplicate,
 * ignored); when the ingress refused it (queue full, draining) or failed, `invoke` throws, the
 * SDK answers 500 and Feishu delivers it again. A malformed event is acknowledged and logged:
 * sending it again would not make it readable.
 *
 * Feishu sends each event to one of an app's connections (up to 50), so every replica may hold
 * one; a redelivery to another replica is a duplicate by its event_id in the shared store.
 */
export function createLongConnection(options: LongConnectionOptions): LongConnection {
  const { config, logger, take } = options;
  let failure: string | null = null;
  let running = false;
  let restart: NodeJS.Timeout | undefined;
  const client = new lark.WSClient({
    appId: config.appId,
    appSecret: config.appSecret,
    domain: config.apiUrl,
    logger: toSdkLogger(logger),
    loggerLevel: lark.LoggerLevel.info,
    // Without it a connection whose far end vanished (no close) would count as open for good.
    wsConfig: { pingTimeout: options.pingTimeoutMs / 1000 },
    onReady: () => logger.info({}, 'feishu long connection open'),
    onReconnected: () => logger.info({}, 'feishu long connection open again'),
    onError: (err: Error) => {
      // The SDK gave up: the endpoint refused the app (a wrong secret, long connection not
      // enabled in the console, Feishu busy) or the reconnects ran out. It is started again
      // later, so that a refusal that passes (a fixed console setting, a busy platform) heals.
      failure = err.message;
      logger.error({ err, restartInMs: options.restartAfterFailureMs }, 'feishu long connection failed');
      if (!running) return;
      restart = setTimeout(connect, options.restartAfterFailureMs);
      restart.unref();
    },
  });

  /** What the SDK calls with each event: the JSON of the frame, parsed. */
  const dispatcher = {
    async invoke(data: unknown): Promise<undefined> {
      const body = typeof data === 'object' && data !== null && !Array.isArray(data) ? data : null;
      if (body === null) {
        logger.warn({ kind: typeof data }, 'malformed feishu event acknowledged');
        return undefined;
      }
      let disposition: Disposition;
      try {
        disposition = await take(body as FeishuBody);
      } catch (err) {
        if (!isSwitchboardError(err, 'SB_HTTP_BAD_REQUEST')) throw err;
        logger.warn({ problem: err.message }, 'malformed feishu event acknowledged');
        return undefined;
      }
      if (!disposition.acknowledge) {
        // As for a webhook's 503, the refusal is the ingress's to record; the SDK logs the 500.
        logger.debug({ code: disposition.code }, 'feishu event refused, answered 500 for redelivery');
        throw new SwitchboardError(disposition.code, { message: disposition.message });
      }
      return undefined;
    },
  };

  function connect() {
    // Only `invoke` is called on the dispatcher; the SDK's own would check tokens and decrypt,
    // which a long connection's events do not need.
    void client.start({ eventDispatcher: dispatcher as unknown as lark.EventDispatcher });
  }

  return {
    start() {
      failure = null;
      running = true;
      connect();
    },
    stop() {
      running = false;
      clearTimeout(restart);
      // An event being taken now is not answered: Feishu delivers it again, a duplicate.
      client.close({ force: true });
    },
    health() {
      const { state } = client.getConnectionStatus();
      if (state === 'connected') return { ready: true };
      return { ready: false, detail: `long connection ${state}${failure === null ? '' : `: ${failure}`}` };
    },
  };
}
