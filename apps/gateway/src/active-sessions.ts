/** How often idle sessions are forgotten; also the precision of each session's last-seen time. */
const RESOLUTION_MS = 1000;

/**
 * Counts the sessions that had a message within the last `windowMs` (the
 * `switchboard_active_sessions` gauge), at O(1) per message.
 *
 * Sessions are kept in a Map in last-seen order, so forgetting stops at the first one still
 * active. A session is moved to the end at most once per RESOLUTION_MS, and idle ones are
 * forgotten at most that often: each move leaves a hole at the front of the Map that a scan from
 * the front must skip, so moving and scanning on every message made a busy session cost as much
 * as all the holes before it (bench/HISTORY.md#tuning-pass-3-answers-and-metrics).
 */
export class ActiveSessions {
  readonly #lastSeen = new Map<string, number>();
  readonly #windowMs: number;
  #forgotAt = Number.NEGATIVE_INFINITY;

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Records a message of `session` at `at` (ms since the epoch). */
  touch(session: string, at: number): void {
    const seenAt = this.#lastSeen.get(session);
    if (seenAt !== undefined) {
      if (at - seenAt < RESOLUTION_MS) return;
      this.#lastSeen.delete(session);
    }
    this.#lastSeen.set(session, at);
    if (at - this.#forgotAt >= RESOLUTION_MS) this.#forgetIdle(at);
  }

  /** Sessions seen within the window before `now`. */
  count(now: number): number {
    this.#forgetIdle(now);
    return this.#lastSeen.size;
  }

  #forgetIdle(now: number): void {
    this.#forgotAt = now;
    for (const [session, seenAt] of this.#lastSeen) {
      if (now - seenAt < this.#windowMs) break;
      this.#lastSeen.delete(session);
    }
  }
}
