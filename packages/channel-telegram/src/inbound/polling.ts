import type { Disposition } from '@switchboard/channel-kit';
import { type BackoffPolicy, type Logger, isSwitchboardError, pause, retryDelayMs } from '@switchboard/core';
import type { Api } from 'grammy';
import type { Update } from 'grammy/types';
import { toChannelError } from '../errors.js';
import { ALLOWED_UPDATES } from './normalize.js';

export interface PollingOptions {
  api: Api;
  channelId: string;
  /** The bot token, kept out of errors. */
  token: string;
  /** How long one getUpdates call waits for updates (Telegram's `timeout`, whole seconds). */
  pollTimeoutMs: number;
  /** Waits after failed getUpdates calls or failed handling, growing per consecutive failure. */
  retry: BackoffPolicy;
  /**
   * Takes one update to the ingress. Resolves once it is journaled (or final): acknowledged, the
   * offset may pass it; otherwise it is fetched again after `retryAfterMs`. Throws when it
   * could not be, e.g. the store is down — the update is then fetched again after a wait.
   */
  handle: (update: Update) => Promise<Disposition>;
  logger: Logger;
}

export interface Polling {
  /** True until the loop has ended. */
  readonly running: boolean;
  /** Aborts the pending long poll or wait and resolves once the loop has ended. */
  stop(): Promise<void>;
}

/**
 * grammY types signals with its `abort-controller` polyfill; Node's own AbortSignal works at
 * runtime (grammY only calls addEventListener on it).
 */
export type ApiSignal = Parameters<Api['getUpdates']>[1];

/** How long `stop` waits for the call that confirms the last offset. */
const CONFIRM_TIMEOUT_MS = 5_000;

/**
 * For this many poll timeouts after the loop starts, a 409 Conflict is the previous holder's
 * long poll still open at Telegram (a takeover of the channel lease, docs/design.md §5): it ends
 * within one poll timeout, so it is waited out, not reported as a fault.
 */
const CONFLICT_GRACE_POLLS = 2;

/** Telegram's 409: another getUpdates (or a webhook) holds the token. */
function isConflict(err: unknown): boolean {
  return isSwitchboardError(err) && (err.details as { status?: unknown } | undefined)?.status === 409;
}

/**
 * The getUpdates loop. Telegram forgets every update below the `offset` of the next call, so
 * the offset moves past an update only after `handle` acknowledged it — that is, after the
 * ingress journaled it. grammY's `bot.start()` confirms a batch as soon as its middleware
 * returns, which would also confirm updates the ingress refused. A refused update stops the
 * batch: the loop waits `retryAfterMs` and fetches from that update again. Updates run one at
 * a time, so each chat keeps Telegram's order.
 */
export function startPolling(options: PollingOptions): Polling {
  const { api, channelId, token, logger } = options;
  const abort = new AbortController();
  const { signal } = abort;
  let offset: number | undefined;
  let failures = 0;
  let running = true;
  const conflictsExpectedUntil = performance.now() + CONFLICT_GRACE_POLLS * options.pollTimeoutMs;

  async function fail(err: unknown, what: string): Promise<void> {
    failures += 1;
    const waitMs = retryDelayMs(failures, options.retry);
    if (isConflict(err) && performance.now() < conflictsExpectedUntil) {
      logger.warn(
        { waitMs, failures },
        'getUpdates conflict after start: waiting for the previous poller to end',
      );
    } else {
      // A refused token or a competing poller (409) will not heal by waiting: a human must act.
      const level = isSwitchboardError(err) && !err.retryable ? 'error' : 'warn';
      logger[level]({ err, waitMs, failures }, what);
    }
    await pause(waitMs, signal);
  }

  /** Handles a batch up to the first update that must be fetched again. */
  async function handleBatch(updates: readonly Update[]): Promise<void> {
    for (const update of updates) {
      if (signal.aborted) return;
      let disposition: Disposition;
      try {
        disposition = await options.handle(update);
      } catch (err) {
        await fail(err, 'update not accepted, fetching it again');
        return;
      }
      if (!disposition.acknowledge) {
        logger.debug(
          { updateId: update.update_id, waitMs: disposition.retryAfterMs },
          'update refused, polling paused',
        );
        await pause(disposition.retryAfterMs, signal);
        return;
      }
      offset = update.update_id + 1;
      failures = 0;
    }
  }

  async function loop(): Promise<void> {
    const timeout = Math.round(options.pollTimeoutMs / 1000);
    while (!signal.aborted) {
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          { offset, timeout, allowed_updates: [...ALLOWED_UPDATES] },
          signal as ApiSignal,
        );
      } catch (err) {
        if (signal.aborted) break;
        await fail(toChannelError(err, { channelId, method: 'getUpdates', token }), 'getUpdates failed');
        continue;
      }
      await handleBatch(updates);
    }
  }

  /** Confirms what was handled since the last call, so that a restart does not fetch it again. */
  async function confirm(): Promise<void> {
    if (offset === undefined) return;
    try {
      await api.getUpdates(
        { offset, limit: 1, timeout: 0 },
        AbortSignal.timeout(CONFIRM_TIMEOUT_MS) as ApiSignal,
      );
    } catch (err) {
      logger.debug(
        { err: toChannelError(err, { channelId, method: 'getUpdates', token }) },
        'final offset not confirmed',
      );
    }
  }

  const done = loop()
    .then(confirm)
    .finally(() => {
      running = false;
    });

  return {
    get running() {
      return running;
    },
    async stop() {
      abort.abort();
      await done;
    },
  };
}
