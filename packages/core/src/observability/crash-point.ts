import { writeSync } from 'node:fs';

/**
 * Test-only crash points (docs/RELIABILITY.md "Crash points"). `SWITCHBOARD_CRASH_AT=<point>[:<nth>]`,
 * read once when this module loads, makes the process kill itself with SIGKILL, synchronously, the
 * nth time (default: the first) the message path reaches `<point>`: the reliability suite proves
 * with it what each side believes after a crash between two durable writes, or between a write
 * and a network call. It is no config key and has no place in production; unset, a point costs
 * one comparison.
 *
 * Each name says where on the message path the process dies, and what is durable by then
 * (docs/design.md §2 "Durability", §5 "If a replica dies"):
 */
export const CRASH_POINTS = [
  /** HTTP channel: the `Idempotency-Key` is bound to a new message id, nothing is enqueued. */
  'ingress.after-idempotency-key',
  /** The message is journaled (SQLite) or enqueued (Redis); the platform is not acknowledged. */
  'ingress.after-journal',
  /** A claim's attempt count is durable; the pipeline may have been called (SQLite writes it behind). */
  'claim.after-attempt-mark',
  /** The pipeline answered; nothing of its answer is stored. */
  'pipeline.after-answer',
  /** A turn's replies (an answer or a dead-letter reply) are in the outbox; the turn is not settled. */
  'outbox.after-add',
  /** The pool's completion is durable; with Redis, its outcome's records are not written yet. */
  'settle.after-complete',
  /** The pool's retry (its backoff due time) is durable; the retry has not run. */
  'settle.after-retry',
  /** A delivery is claimed by the reply sender; the platform was not called. */
  'send.before-platform-call',
  /** The platform took the replies; the delivery is still in the outbox. */
  'send.after-platform-call',
  /** The delivery's removal is durable (with SQLite, its records too); with Redis, its records are not. */
  'delivery.after-removal',
  /**
   * An outcome's records (audit record, final status) landed; with Redis, its kept copy is not
   * forgotten yet (docs/design.md §5 "Outcomes kept with their settlement").
   */
  'records.after-write',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

/** Where the process is to die: `point`, the `nth` time it is reached. */
export interface CrashAt {
  point: CrashPoint;
  nth: number;
}

const CRASH_AT_PATTERN = /^([a-z.-]+)(?::([1-9][0-9]*))?$/;

/**
 * Parses a `SWITCHBOARD_CRASH_AT` value; undefined (or empty) means no crash. Throws naming the
 * value when it names no point or its count is not a positive integer: a crash point that can
 * never fire would pass for one that was never reached.
 */
export function parseCrashAt(value: string | undefined): CrashAt | undefined {
  if (value === undefined || value === '') return undefined;
  const match = CRASH_AT_PATTERN.exec(value);
  const point = match?.[1];
  if (match === null || !(CRASH_POINTS as readonly string[]).includes(point ?? '')) {
    throw new Error(
      `SWITCHBOARD_CRASH_AT: "${value}" is not <point>[:<nth>] with a known point (${CRASH_POINTS.join(', ')})`,
    );
  }
  return { point: point as CrashPoint, nth: Number(match[2] ?? '1') };
}

const armed = parseCrashAt(process.env.SWITCHBOARD_CRASH_AT);
let reached = 0;

/** Whether `SWITCHBOARD_CRASH_AT` names `point`: for a point whose way there costs something. */
export function crashPointArmed(point: CrashPoint): boolean {
  return armed?.point === point;
}

/**
 * Kills the process at once with SIGKILL when `SWITCHBOARD_CRASH_AT` names `point` and this is its
 * nth reach, after writing `crash point <point>` to stderr (synchronously: nothing after it runs).
 */
export function crashPoint(point: CrashPoint): void {
  if (armed === undefined || armed.point !== point) return;
  reached += 1;
  if (reached !== armed.nth) return;
  writeSync(2, `crash point ${point}\n`);
  process.kill(process.pid, 'SIGKILL');
}

/**
 * Returns `write` unchanged, and when `SWITCHBOARD_CRASH_AT` names `point`, crashes there once
 * `write` has resolved, before its awaiting caller resumes: for writes made behind the caller
 * (a journal write committed in a later group commit), where "after" means "after it is durable".
 */
export function crashAfter<T>(point: CrashPoint, write: Promise<T>): Promise<T> {
  if (armed === undefined || armed.point !== point) return write;
  write.then(
    () => crashPoint(point),
    () => {},
  );
  return write;
}
