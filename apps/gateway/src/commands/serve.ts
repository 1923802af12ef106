import { loadConfig } from '@switchboard/config';
import { type Gateway, createGateway } from '../gateway.js';
import { createRootLogger } from '../logger.js';
import { type ReloadSignal, holdReloadSignal } from '../reload-signal.js';
import { VERSION } from '../version.js';

/**
 * `switchboard serve`: runs the gateway until SIGTERM/SIGINT, then drains and exits 0 (a second
 * signal exits at once). SIGHUP reloads the routing rules; a bad file is refused and the old
 * rules stay. A SIGHUP that arrives while starting is applied once the gateway listens: the
 * file may have changed after it was first read.
 */
export async function serve(path: string, reloadSignal: ReloadSignal = holdReloadSignal()): Promise<number> {
  const logger = createRootLogger();
  let started: Gateway | undefined;
  let reloadWhenStarted = false;
  const reload = (gateway: Gateway) =>
    gateway
      .reloadRouting()
      .catch((err: unknown) => logger.error({ err }, 'routing reload refused: keeping the old rules'));
  reloadSignal.handleWith(() => {
    if (started === undefined) {
      reloadWhenStarted = true;
      logger.info({}, 'reload requested while starting: applying it once started');
      return;
    }
    void reload(started);
  });

  const config = await loadConfig(path);
  const gateway = await createGateway({
    config,
    configPath: path,
    logger,
    httpLogger: logger,
    version: VERSION,
  });

  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception: exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    logger.error({ err }, 'unhandled rejection');
  });

  await gateway.start();
  started = gateway;
  if (reloadWhenStarted) void reload(gateway);

  return new Promise<number>((resolve) => {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) {
        logger.warn({ signal }, 'second signal: exiting without draining');
        process.exit(1);
      }
      signalled = true;
      logger.info({ signal }, 'shutting down');
      gateway.stop().then(
        () => resolve(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
