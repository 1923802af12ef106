import { createRequire } from 'node:module';
import type { SecretMasker } from '@switchboard/core';
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
