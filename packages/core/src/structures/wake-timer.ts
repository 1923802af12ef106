/**
 * One timer for many deadlines: armed for the earliest time asked of it, it calls `fire` once
 * then, and the caller re-arms it for whatever is due next. The pool's delayed sessions and the
 * controller's turn deadlines each use one instead of a timer per item. Unref'd: a pending wake
 * never keeps the process alive.
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
    if (at >= this.#at) return;
    this.cancel();
    this.#at = at;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#at = Number.POSITIVE_INFINITY;
        this.#fire();
      },
      Math.max(0, at - this.#now()),
    );
    this.#timer.unref();
  }

  cancel(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }
}
