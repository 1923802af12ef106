import { loadConfig } from '@switchboard/config';
import { createSecretMasker } from '@switchboard/core';
import { createGateway } from '../gateway.js';
import { createRootLogger } from '../logger.js';
import { VERSION } from '../version.js';

/**
 * `switchboard serve`: runs the gateway until SIGTERM/SIGINT, then drains and exits 0 (a second
 * signal exits at once). SIGHUP reloads the routing rules; a bad file is refused and the old
 * rules stay.
 */
export async function serve(path: string): Promise<number> {
  // The config first: the logger masks its secrets. A config error is thrown to the CLI, which
  // prints it; its lines never show a secret's value.
  const config = await loadConfig(path);
  const mask = createSecretMasker(config.secrets);
  const logger = createRootLogger({ mask });
  const gateway = await createGateway({
    config,
    configPath: path,
    logger,
    mask,
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
  process.on('SIGHUP', () => {
    gateway
      .reloadRouting()
      .catch((err: unknown) => logger.error({ err }, 'routing reload refused: keeping the old rules'));
  });

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
