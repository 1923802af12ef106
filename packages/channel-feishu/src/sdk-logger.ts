import type { Logger } from '@switchboard/core';

/** The SDK's logger interface: it passes each line as one array of parts. */
export interface SdkLogger {
  error: (...parts: unknown[]) => void;
  warn: (...parts: unknown[]) => void;
  info: (...parts: unknown[]) => void;
  debug: (...parts: unknown[]) => void;
  trace: (...parts: unknown[]) => void;
}

/** The parts of an SDK line as fields: its text, and the error it carries if any. */
function detailOf(parts: unknown[]): { detail: string; err?: unknown } {
  const flat = parts.flat();
  const err = flat.find((part) => part instanceof Error);
  const detail = flat
    .filter((part) => part !== err)
    .map((part) => (typeof part === 'string' ? part : String(part)))
    .join(' ');
  return err === undefined ? { detail } : { detail, err };
}

/**
 * The long connection's lines in the gateway's log. Its debug and trace lines are dropped: they
 * carry the connection URL (with its ticket) and each event. Its errors are warnings: a dropped
 * connection that it then re-opens logs several; the channel itself logs, as an error, the
 * failure the SDK gives up on.
 */
export function toSdkLogger(logger: Logger): SdkLogger {
  return {
    error: (...parts) => logger.warn(detailOf(parts), 'feishu sdk'),
    warn: (...parts) => logger.warn(detailOf(parts), 'feishu sdk'),
    info: (...parts) => logger.debug(detailOf(parts), 'feishu sdk'),
    debug() {},
    trace() {},
  };
}
