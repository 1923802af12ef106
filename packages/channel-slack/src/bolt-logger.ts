import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from '@switchboard/core';

const ORDER = [LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR];

/** Bolt passes free text (and errors); the gateway's log lines keep a constant message. */
function detailOf(parts: unknown[]): { detail: string; err?: unknown } {
  const err = parts.find((part) => part instanceof Error);
  const detail = parts
    .filter((part) => part !== err)
    .map((part) => (typeof part === 'string' ? part : String(part)))
    .join(' ');
  return err === undefined ? { detail } : { detail, err };
}

/**
 * Bolt's logger interface over the gateway's logger, so that the library's lines (Web API retries,
 * Socket Mode reconnects) end up in the same JSON log. Starts at `info`: Bolt's debug output
 * dumps every request and payload, which the channel's own debug lines make redundant.
 */
export function toBoltLogger(logger: Logger): BoltLogger {
  let level = LogLevel.INFO;
  const enabled = (at: LogLevel) => ORDER.indexOf(at) >= ORDER.indexOf(level);
  return {
    debug: (...parts: unknown[]) => enabled(LogLevel.DEBUG) && logger.debug(detailOf(parts), 'slack library'),
    info: (...parts: unknown[]) => enabled(LogLevel.INFO) && logger.info(detailOf(parts), 'slack library'),
    warn: (...parts: unknown[]) => enabled(LogLevel.WARN) && logger.warn(detailOf(parts), 'slack library'),
    error: (...parts: unknown[]) => enabled(LogLevel.ERROR) && logger.error(detailOf(parts), 'slack library'),
    setLevel(next) {
      level = next;
    },
    getLevel: () => level,
    setName() {},
  };
}
