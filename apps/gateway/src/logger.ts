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

/** The one root logger of the process: pino JSON on stdout (or `destination`). Packages get children of it. */
export function createRootLogger(
  level = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): PinoLogger {
  return pino(
    {
      level,
      base: { service: 'switchboard' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}
