import { createRefusalLog } from '@switchboard/channel-kit';
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
 * carry the connection URL (with its ticket) and each event. A refused event's line is noted at
 * most once a minute. Its other errors are warnings: a dropped connection that it then re-opens
 * logs several; the channel itself logs, as an error, the
 * failure the SDK gives up on.
 */
export function toSdkLogger(logger: Logger): SdkLogger {
  // The SDK logs each event the ingress refused (queue full, draining) as it answers 500: once a
  // minute here, with a count, so that backpressure does not flood the log.
  const noteRefusal = createRefusalLog({
    logger,
    message: 'feishu events refused, answered 500 for redelivery',
  });
  return {
    error: (...parts) => {
      const fields = detailOf(parts);
      if (fields.detail.includes('invoke event failed')) noteRefusal({ problem: fields.detail });
      else logger.warn(fields, 'feishu sdk');
    },
    warn: (...parts) => logger.warn(detailOf(parts), 'feishu sdk'),
    info: (...parts) => logger.debug(detailOf(parts), 'feishu sdk'),
    debug() {},
    trace() {},
  };
}
