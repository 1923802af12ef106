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

export interface RootLoggerOptions {
  /** Default: `$LOG_LEVEL`, else `info`. */
  level?: string;
  /** Default: stdout. */
  destination?: DestinationStream;
  /** Built from every configured secret; with it, no line shows a secret. Default: none. */
  mask?: SecretMasker;
}

/** The one root logger of the process: pino JSON on stdout (or `destination`). Packages get children of it. */
export function createRootLogger(options: RootLoggerOptions = {}): PinoLogger {
  const { level = process.env.LOG_LEVEL ?? 'info', destination = pino.destination(1), mask } = options;
  return pino(
    {
      level,
      base: { service: 'switchboard' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    mask === undefined ? destination : maskedStream(destination, mask),
  );
}
