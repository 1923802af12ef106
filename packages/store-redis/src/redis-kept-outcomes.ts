import {
  type KeptOutcome,
  type Logger,
  type Outcome,
  outcomeKeyOf,
  overflowOutcomeOf,
  silentLogger,
} from '@switchboard/core';
import type { RedisClient, RedisTarget } from './redis-connection.js';
import { openScriptClient } from './script-client.js';
import { type MessageReply, queuedOf } from './script-replies.js';
import type { ReplicationOptions } from './replication-wait.js';

/**
 * How long an outcome kept by a settlement stays its settling replica's to record: then any
 * replica records it (`RedisKeptOutcomes.start`). Its records take milliseconds to write (or
 * to fall back to the audit outbox); the margin covers a slow database. It stays below the minute
 * for which the pool says a settled message is `settled` (`locate`), so that its status is stored
 * before the message could read as unknown.
 */
export const KEPT_OUTCOME_LEASE_MS = 30_000;

/**
 * How often a kept outcome is taken for recovery before it is given up (moved to
 * `{<prefix>}:kept-outcomes:dead`, ERROR `kept outcome given up`): at `KEPT_OUTCOME_LEASE_MS`
 * apart, five minutes of records the database kept refusing, or of replicas that could not write
 * them (`start`'s `record` answered false).
 */
export const KEPT_OUTCOME_MAX_CLAIMS = 10;

/** Kept outcomes `claimDue` takes at most unless told otherwise. */
export const KEPT_OUTCOMES_PER_CLAIM = 100;

/** Forgets one call removes at most (they are spread as ARGV over Lua's stack). */
const FORGET_BATCH = 500;

/** The keys of the kept outcomes (lua/kept-outcomes/includes/keep-outcomes.lua). */
export function keptOutcomeKeysOf(prefix: string): { hash: string; due: string; dead: string } {
  return {
    hash: `{${prefix}}:kept-outcomes`,
    due: `{${prefix}}:kept-outcomes:due`,
    dead: `{${prefix}}:kept-outcomes:dead`,
  };
}

/**
 * The ARGV a settling script takes to keep `ended` (lua/kept-outcomes/includes/keep-outcomes.lua): when another
 * replica may record them ('' when none is kept), then a key and a JSON per kept outcome.
 */
export function keptOutcomeArgs(
  ended: readonly Outcome[] | undefined,
  keep: KeptOutcome | undefined,
  dueAt: number,
): { dueAt: number | ''; pairs: string[] } {
  const pairs: string[] = [];
  if (keep !== undefined && ended !== undefined) {
    for (const outcome of ended) {
      const kept = keep(outcome);
      if (kept !== null) pairs.push(outcomeKeyOf(outcome), kept);
    }
  }
  return { dueAt: pairs.length === 0 ? '' : dueAt, pairs };
}

/** What the enqueue script keeps of a message it dropped from a full session. */
interface OverflowEntry {
  overflowed: MessageReply;
  at: number;
}

/** The outcome a kept entry holds. */
function outcomeOfEntry(json: string): Outcome {
  const entry = JSON.parse(json) as Outcome | OverflowEntry;
  if ('overflowed' in entry) return overflowOutcomeOf(queuedOf(entry.overflowed), entry.at);
  return entry;
}

export interface RedisKeptOutcomesOptions {
  /**
   * Replicas that must hold a write before the store answers for it (`WAIT`; docs/design.md §5
   * "Failover"). Default: none waited for.
   */
  replication?: ReplicationOptions | undefined;
  /** Redis URL (an owned connection with `FAIL_FAST_OPTIONS`), or `client`. */
  url?: RedisTarget;
  /** A connection the caller owns (give it `FAIL_FAST_OPTIONS`); `close()` leaves it open. */
  client?: RedisClient;
  /** The deployment's prefix: keys are `{<prefix>}:kept-outcomes…`. */
  prefix: string;
  /** The clock of the due times, ms: the pool's. Default `Date.now`. */
  now?: () => number;
  /** How often this replica looks for outcomes whose time came (ms). Default 5000. */
  recoverEveryMs?: number;
  /**
   * How long forgets are gathered into one call (ms). Default 1000: one call a second per replica,
   * well inside the 30 s after which a kept outcome not forgotten is recovered.
   */
  forgetEveryMs?: number;
  logger?: Logger;
}

const DEFAULTS = {
  now: Date.now,
  recoverEveryMs: 5000,
  forgetEveryMs: 1000,
} satisfies Partial<RedisKeptOutcomesOptions>;

/**
 * The outcomes the settling scripts keep beside their settlement until their records are stored
 * (docs/design.md §5 "Outcomes kept with their settlement"): the replica that settled forgets
 * each once its records landed; any replica records those whose settling replica did not,
 * `KEPT_OUTCOME_LEASE_MS` after the settlement.
 */
export interface RedisKeptOutcomes {
  /** Forgets `outcome` (its records landed); gathered into one call every `forgetEveryMs`. */
  forget(outcome: Outcome): void;
  /**
   * Takes up to `limit` (default `KEPT_OUTCOMES_PER_CLAIM`) kept outcomes whose time came, each
   * this replica's to record for `KEPT_OUTCOME_LEASE_MS` (then another's, if it is not forgotten
   * meanwhile). One taken `KEPT_OUTCOME_MAX_CLAIMS` times before is given up instead (ERROR
   * `kept outcome given up`).
   */
  claimDue(limit?: number): Promise<Outcome[]>;
  /**
   * Every `recoverEveryMs`, hands `record` the outcomes whose time came. `record` answers false
   * for one this replica cannot record (it has no writer for its records): it is left to another
   * replica once its lease ends.
   */
  start(record: (outcome: Outcome) => boolean): void;
  /**
   * Stops looking for outcomes to recover, at once: a replica shutting down has no listeners left
   * to record them. An outcome taken by a look under way stays taken until its lease ends.
   */
  stopRecovering(): void;
  /** Stops the timers, writes the forgets gathered so far, and closes an owned connection. */
  close(): Promise<void>;
}

export async function createRedisKeptOutcomes(options: RedisKeptOutcomesOptions): Promise<RedisKeptOutcomes> {
  const settings = { ...DEFAULTS, ...options };
  const logger = (options.logger ?? silentLogger).child({ component: 'kept-outcomes.redis' });
  const keys = keptOutcomeKeysOf(options.prefix);
  const { client, ownsClient, script } = await openScriptClient({
    url: options.url,
    client: options.client,
    prefix: options.prefix,
    retryAfterMs: 1000,
    replication: options.replication,
  });
  let forgets: string[] = [];
  let forgetTimer: NodeJS.Timeout | undefined;
  /** The timers' flushes under way, if any: `close` lets their later batches reach Redis first. */
  let flushing: Promise<void> = Promise.resolve();
  let recoverTimer: NodeJS.Timeout | undefined;
  let recovering = false;

  /** Gathers `key` for the next forget call. */
  function forgetKey(key: string): void {
    forgets.push(key);
    forgetTimer ??= setTimeout(() => {
      // A flush may still be sending when the next starts (a slow Redis): close waits for both.
      flushing = Promise.all([flushing, flushForgets()]).then(() => {});
    }, settings.forgetEveryMs);
  }

  /**
   * Removes the gathered keys. A failed call is only logged: those outcomes are recorded again,
   * idempotently, by whichever replica takes them once their time came.
   */
  async function flushForgets(): Promise<void> {
    forgetTimer = undefined;
    const due = forgets;
    forgets = [];
    for (let at = 0; at < due.length; at += FORGET_BATCH) {
      const batch = due.slice(at, at + FORGET_BATCH);
      await script('kept-outcomes/forget', [keys.hash, keys.due], batch).catch((err: unknown) =>
        logger.warn(
          { err, outcomes: batch.length },
          'forgetting recorded outcomes failed: they are recorded again',
        ),
      );
    }
  }

  async function claimDue(limit = KEPT_OUTCOMES_PER_CLAIM): Promise<Outcome[]> {
    const [taken, givenUp] = await script<[string[], string[]]>(
      'kept-outcomes/claim',
      [keys.hash, keys.due],
      [settings.now(), KEPT_OUTCOME_LEASE_MS, limit, KEPT_OUTCOME_MAX_CLAIMS],
    );
    for (const key of givenUp)
      logger.error(
        { key, claims: KEPT_OUTCOME_MAX_CLAIMS, deadList: keys.dead },
        'kept outcome given up: its records failed every time; it waits in the dead list',
      );
    const outcomes: Outcome[] = [];
    for (let index = 0; index < taken.length; index += 2) {
      const key = taken[index] as string;
      try {
        outcomes.push(outcomeOfEntry(taken[index + 1] as string));
      } catch (error) {
        // Nothing could ever record it: dropped. The log names it by its key (message id and
        // outcome) only: the entry, and a parse error quoting it, hold the user's text and the
        // replies, which `audit.store_text` may keep from any record.
        const entry = taken[index + 1] as string;
        logger.error({ key, bytes: entry.length, cause: (error as Error).name }, 'dead kept outcome');
        forgetKey(key);
      }
    }
    return outcomes;
  }

  return {
    forget(outcome) {
      forgetKey(outcomeKeyOf(outcome));
    },

    claimDue,

    start(record) {
      if (recoverTimer !== undefined) return;
      recovering = true;
      recoverTimer = setInterval(() => {
        claimDue().then(
          (due) => {
            for (const outcome of due) {
              // A look that ended after the stop hands nothing over: nobody is left to record.
              if (!recovering) return;
              if (!record(outcome)) {
                logger.warn(
                  { messageId: outcome.message.id, outcome: outcome.kind, channel: outcome.message.channel },
                  'unrecorded outcome left to another replica: none of its records can be written here',
                );
                continue;
              }
              logger.warn(
                { messageId: outcome.message.id, outcome: outcome.kind },
                'unrecorded outcome recovered: its settling replica did not record it',
              );
            }
          },
          (err: unknown) => logger.warn({ err }, 'kept outcomes check failed: retrying'),
        );
      }, settings.recoverEveryMs);
      recoverTimer.unref();
    },

    stopRecovering() {
      recovering = false;
      clearInterval(recoverTimer);
    },

    async close() {
      recovering = false;
      clearInterval(recoverTimer);
      clearTimeout(forgetTimer);
      await flushing;
      await flushForgets();
      if (ownsClient) await client.quit().catch(() => client.disconnect());
    },
  };
}
