import { createRequire } from 'node:module';
import type { Logger, SecretMasker } from '@switchboard/core';
import { type DestinationStream, type Logger as PinoLogger, pino } from 'pino';

/**
 * Paths of secrets that must never reach a log line, wherever a config or request object is
 * logged. Set once, here (STYLE.md "Logging").
 */
const REDACT_PATHS = [
  'token',
  '*.token',
  'botToken',
  '*.botToken',
  'signingSecret',
  '*.signingSecret',
  'appToken',
  '*.appToken',
  'apiKeys',
  '*.apiKeys',
  'api_key',
  '*.api_key',
  'secret',
  '*.secret',
  'options.api_key',
  'options.secret',
  'req.headers.authorization',
  'req.headers["x-telegram-bot-api-secret-token"]',
  'req.headers["x-slack-signature"]',
];

/**
 * `destination` behind `mask`: each line is masked as pino hands it over, serialized and whole,
 * so a secret is caught wherever it sits — an error message, a cause, a platform's description —
 * which the key-based redaction paths cannot see. Only written lines pay for it.
 */
function maskedStream(destination: DestinationStream, mask: SecretMasker): DestinationStream {
  return { write: (line: string) => destination.write(mask(line)) };
}

/** `json`: one JSON object per line; `pretty`: one coloured, human-readable line per event. */
export type LogFormat = 'json' | 'pretty';

/**
 * `LOG_FORMAT` (`json` or `pretty`) when set, else pretty on a terminal and JSON otherwise: a
 * person reads a terminal, while a pipe, a file or a container's log driver wants JSON.
 */
export function logFormatOf(
  env: NodeJS.ProcessEnv = process.env,
  isTty = process.stdout.isTTY === true,
): LogFormat {
  if (env.LOG_FORMAT === 'json' || env.LOG_FORMAT === 'pretty') return env.LOG_FORMAT;
  return isTty ? 'pretty' : 'json';
}

/**
 * `destination` behind pino-pretty, in process and synchronous: a worker-thread transport would
 * lose the last lines of a process that exits at once (a failed start). pino-pretty is required
 * here, not imported above: JSON logs (production) never load it.
 */
function prettyStream(destination: DestinationStream): DestinationStream {
  const { prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  const prettify = prettyFactory({
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    singleLine: true,
  });
  return { write: (line: string) => destination.write(prettify(line)) };
}

export interface RootLoggerOptions {
  /** Default: `$LOG_LEVEL`, else `info`. */
  level?: string;
  /** Default: `logFormatOf()` (`$LOG_FORMAT`, else pretty on a terminal) on stdout, JSON elsewhere. */
  format?: LogFormat;
  /** Default: stdout. */
  destination?: DestinationStream;
  /** Built from every configured secret; with it, no line shows a secret. Default: none. */
  mask?: SecretMasker;
}

/**
 * The one root logger of the process: pino on stdout (or `destination`), JSON or pretty lines.
 * Packages get children of it.
 */
export function createRootLogger(options: RootLoggerOptions = {}): PinoLogger {
  const {
    level = process.env.LOG_LEVEL ?? 'info',
    destination,
    format = destination === undefined ? logFormatOf() : 'json',
    mask,
  } = options;
  // Masked before prettifying: the masker matches secrets in the serialized JSON line.
  const target = destination ?? pino.destination(1);
  const out = format === 'pretty' ? prettyStream(target) : target;
  return pino(
    {
      level,
      base: { service: 'switchboard' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    mask === undefined ? out : maskedStream(out, mask),
  );
}

type Level = 'debug' | 'info' | 'warn' | 'error';

/**
 * A child of `parent` that becomes a pino child at its first line of an enabled level, not when it
 * is made: a pino child copies its bindings through every redaction path (`REDACT_PATHS`) as it
 * is made, and the children of the hot path — one per turn, one per message — mostly log at
 * `debug`, which the default level drops. Such a child costs one object; the line it writes,
 * when it writes one, is the line the pino child would have written. The level is the root's:
 * nothing sets a child's own.
 */
class DeferredChild implements Logger {
  readonly #root: PinoLogger;
  readonly #parent: () => Logger;
  readonly #bindings: object;
  #made: Logger | undefined;

  constructor(root: PinoLogger, parent: () => Logger, bindings: object) {
    this.#root = root;
    this.#parent = parent;
    this.#bindings = bindings;
  }

  debug(fields: object, message: string): void {
    this.#write('debug', fields, message);
  }

  info(fields: object, message: string): void {
    this.#write('info', fields, message);
  }

  warn(fields: object, message: string): void {
    this.#write('warn', fields, message);
  }

  error(fields: object, message: string): void {
    this.#write('error', fields, message);
  }

  child(bindings: object): Logger {
    return new DeferredChild(this.#root, () => this.#logger(), bindings);
  }

  #write(level: Level, fields: object, message: string): void {
    if (this.#root.isLevelEnabled(level)) this.#logger()[level](fields, message);
  }

  #logger(): Logger {
    this.#made ??= this.#parent().child(this.#bindings);
    return this.#made;
  }
}

/**
 * `root` as the packages receive it: its own lines go straight to it, and its children (and
 * theirs) are made by pino only once they write a line at an enabled level (`DeferredChild`).
 */
export function withDeferredChildren(root: PinoLogger): Logger {
  return {
    debug: (fields, message) => root.debug(fields, message),
    info: (fields, message) => root.info(fields, message),
    warn: (fields, message) => root.warn(fields, message),
    error: (fields, message) => root.error(fields, message),
    child: (bindings) => new DeferredChild(root, () => root, bindings),
  };
}
