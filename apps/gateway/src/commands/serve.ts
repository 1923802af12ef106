import { loadConfig } from '@switchboard/config';
import {
  type Logger,
  type SecretMasker,
  SwitchboardError,
  createSecretMasker,
  isSwitchboardError,
} from '@switchboard/core';
import { type Gateway, createGateway } from '../gateway.js';
import { createRootLogger, withDeferredChildren } from '../logger.js';
import { type ReloadSignal, holdReloadSignal } from '../reload-signal.js';
import { startTracing } from '../tracing.js';
import { VERSION } from '../version.js';

/**
 * `switchboard serve`: runs the gateway until SIGTERM/SIGINT, then drains and exits 0 (a second
 * signal exits at once). SIGHUP reloads the config file (`LiveConfig.reload`); a bad file is
 * refused and the configuration in force stays. A SIGHUP that arrives while starting is applied once the gateway listens: the
 * file may have changed after it was first read. A failed start is logged through the masking
 * logger and returns 1.
 */
export async function serve(path: string, reloadSignal: ReloadSignal = holdReloadSignal()): Promise<number> {
  let started: Gateway | undefined;
  let reloadWhenStarted = false;
  // Installed before the config is read, so before the logger that masks the config's secrets
  // exists: a SIGHUP that comes first is only remembered, and logged once there is a logger.
  let startLogger: Pick<Logger, 'info'> | undefined;
  const noteReloadWhileStarting = () =>
    startLogger?.info({}, 'reload requested while starting: applying it once started');
  reloadSignal.handleWith(() => {
    if (started === undefined) {
      reloadWhenStarted = true;
      noteReloadWhileStarting();
      return;
    }
    void reload(started);
  });

  // The config first: the logger masks its secrets. A config error is thrown to the CLI, which
  // prints it; its lines never show a secret's value.
  const config = await loadConfig(path);
  // A reload adds the new file's secrets: a rotated token is hidden as the old one stays hidden.
  const secrets = new Set(config.secrets);
  let masker = createSecretMasker(secrets);
  const mask: SecretMasker = (text) => masker(text);
  const addSecrets = (more: readonly string[]) => {
    const before = secrets.size;
    for (const secret of more) secrets.add(secret);
    if (secrets.size > before) masker = createSecretMasker(secrets);
  };
  // Off unless a collector is configured.
  const tracing = await startTracing(config.telemetry.traces, VERSION, process.env, mask);
  const logger = createRootLogger({ mask });
  startLogger = logger;
  if (reloadWhenStarted) noteReloadWhileStarting();
  const reload = (gateway: Gateway) =>
    gateway
      .reload()
      .catch((err: unknown) => logger.error({ err }, 'reload refused: keeping the configuration in force'));
  let gateway: Gateway;
  try {
    gateway = await createGateway({
      config,
      configPath: path,
      secretFiles: config.secretFiles,
      secrets,
      addSecrets,
      logger: withDeferredChildren(logger),
      mask,
      httpLogger: logger,
      version: VERSION,
      tracer: tracing?.tracer,
    });

    process.on('uncaughtException', (err) => {
      logger.fatal({ err }, 'uncaught exception: exiting');
      process.exit(1);
    });
    process.on('unhandledRejection', (err) => {
      logger.error({ err }, 'unhandled rejection');
    });

    await gateway.start();
  } catch (err) {
    // Logged through the masking logger, and only a masked copy goes to the CLI, which prints it
    // as `switchboard: CODE: message` (anything else would reach Node, which prints a stack): a
    // platform's error text may quote a secret, as a self-hosted Bot API or a proxy echoing
    // `/bot<token>/getMe` does. The process then exits without a drain: whatever a channel
    // accepted before the failure is in the journal (acknowledged only after the write) and is
    // recovered at the next start.
    logger.fatal({ err }, 'start failed: exiting');
    if (isSwitchboardError(err)) throw new SwitchboardError(err.code, { message: mask(err.message) });
    return 1;
  }
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
        // The spans of the drain's last turns leave before the process does.
        () => (tracing === undefined ? resolve(0) : tracing.shutdown().finally(() => resolve(0))),
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
