/**
 * Node's longest timer delay (2^31 − 1 ms, about 24.8 days). A longer one, or NaN, makes Node
 * fire the timer after 1 ms instead: an idle pool armed for a far due time would wake ~1,000
 * times a second.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * One timer for many deadlines: armed for the earliest time asked of it, it calls `fire` once
 * then, and the caller re-arms it for whatever is due next. The pool's delayed sessions and the
 * controller's turn deadlines each use one instead of a timer per item. Unref'd: a pending wake
 * never keeps the process alive.
 *
 * Any time is safe to arm: one past Node's longest delay is reached in steps of at most that
 * delay (re-armed without calling `fire`), and NaN or +Infinity never wakes.
 */
export class WakeTimer {
  readonly #fire: () => void;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined = undefined;
  #at = Number.POSITIVE_INFINITY;

  constructor(fire: () => void, now: () => number) {
    this.#fire = fire;
    this.#now = now;
  }

  /** Wakes at `at` (ms) unless already set to wake earlier. */
  arm(at: number): void {
    if (Number.isNaN(at) || at >= this.#at) return;
    this.cancel();
    this.#at = at;
    this.#schedule();
  }

  cancel(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }

  #schedule(): void {
    const delayMs = Math.min(Math.max(0, this.#at - this.#now()), MAX_TIMER_DELAY_MS);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // Woken by the clamp, not at the time asked for: wait on.
      if (this.#now() < this.#at) return this.#schedule();
      this.#at = Number.POSITIVE_INFINITY;
      this.#fire();
    }, delayMs);
    this.#timer.unref();
  }
}
