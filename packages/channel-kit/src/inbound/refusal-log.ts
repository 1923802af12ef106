import type { Logger } from '@switchboard/core';

/** Options of `createRefusalLog`. */
export interface RefusalLogOptions {
  logger: Logger;
  /** The line's message. Default: `webhook call refused`. */
  message?: string;
  /** The shortest gap between two warnings. Default: 1 minute. */
  intervalMs?: number;
  /** Clock, ms since the epoch. Default: `Date.now`. */
  now?: () => number;
}

const DEFAULTS = {
  message: 'webhook call refused',
  intervalMs: 60_000,
  now: Date.now,
} satisfies Omit<Required<RefusalLogOptions>, 'logger'>;

/**
 * Where one route notes the calls it refused (401), or a channel the events it refused: the first refusal of each interval is logged
 * as a warning, carrying how many were refused without a line since the last one. Anyone on the
 * internet can post to a webhook, so a flood of forged calls must not become a flood of log lines;
 * a misconfigured secret still shows within a minute.
 */
export function createRefusalLog(options: RefusalLogOptions): (fields: { problem: string }) => void {
  const { logger } = options;
  const message = options.message ?? DEFAULTS.message;
  const intervalMs = options.intervalMs ?? DEFAULTS.intervalMs;
  const now = options.now ?? DEFAULTS.now;
  let lastLoggedAtMs: number | null = null;
  let suppressed = 0;
  return (fields) => {
    const atMs = now();
    if (lastLoggedAtMs !== null && atMs - lastLoggedAtMs < intervalMs) {
      suppressed += 1;
      return;
    }
    logger.warn({ ...fields, suppressed }, message);
    lastLoggedAtMs = atMs;
    suppressed = 0;
  };
}
