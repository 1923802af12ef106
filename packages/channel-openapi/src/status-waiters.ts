import type { FinalStatus, TrackedMessage } from './tracked-message.js';

/** Interest in one message's final status, registered before it is accepted. */
export interface StatusWatch {
  /**
   * The final status, or null when `timeoutMs` passes first or the channel drains (see
   * `StatusTracker.drain`). Ends the watch either way.
   */
  wait(timeoutMs: number): Promise<FinalStatus | null>;
  /** Ends the watch without waiting. */
  cancel(): void;
}

/** The requests waiting for final statuses, and the answers on their way to them. */
export interface StatusWaiters {
  /** Registers a watch on `message`; `release` runs when it ends (`wait` or `cancel`). */
  watch(message: TrackedMessage, release: () => void): StatusWatch;
  /**
   * Hands `final` to every request waiting on `message` at the end of this event-loop turn, with
   * the answers of every other message final in it, then calls `then`.
   */
  answerSoon(message: TrackedMessage, final: FinalStatus, then: () => void): void;
  /** Every `wait` under way and to come returns null at once (`StatusTracker.drain`). */
  drain(): void;
}

/**
 * The waits under way, each ended at once by a drain. A set of callbacks rather than an
 * `AbortSignal`'s listeners: adding and removing an `EventTarget` listener per request was a
 * measurable share of the HTTP path's CPU.
 */
interface Drain {
  drained: boolean;
  readonly waits: Set<() => void>;
}

/** A request's interest in one message; `wait` and `cancel` both end it. */
class Watch implements StatusWatch {
  readonly #message: TrackedMessage;
  readonly #release: () => void;
  readonly #drain: Drain;
  readonly #final: Promise<FinalStatus | null>;
  #settle: ((final: FinalStatus | null) => void) | undefined;

  constructor(message: TrackedMessage, release: () => void, drain: Drain) {
    this.#message = message;
    this.#release = release;
    this.#drain = drain;
    this.#final = new Promise((resolve) => {
      this.#settle = resolve;
      message.waiters.push(resolve);
    });
  }

  async wait(timeoutMs: number): Promise<FinalStatus | null> {
    const end = () => this.cancel();
    const timer = setTimeout(end, timeoutMs);
    const { waits } = this.#drain;
    waits.add(end);
    if (this.#drain.drained) end();
    try {
      return await this.#final;
    } finally {
      clearTimeout(timer);
      waits.delete(end);
      this.cancel();
    }
  }

  cancel(): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    const { waiters } = this.#message;
    const at = waiters.indexOf(settle);
    if (at >= 0) waiters.splice(at, 1);
    settle(null);
    this.#release();
  }
}

export function createStatusWaiters(): StatusWaiters {
  // Waits end on drain, not watches: a watch also keeps an outcome that beat `queued` in memory,
  // and a request admitted as the drain began still needs that.
  const drain: Drain = { drained: false, waits: new Set() };

  // Answers leave together at the end of the event-loop turn, not one by one as turns end: the
  // requests read in one turn are all handled before the first answer is written, and a client
  // waiting on many connections is woken once per burst of writes instead of once per answer.
  // In the HTTP benchmark that took the gateway from ~13k to 17–19k req/s
  // (bench/HISTORY.md#tuning-pass-3-answers-and-metrics).
  let answers: Array<() => void> = [];

  function answerAll(): void {
    const due = answers;
    answers = [];
    for (const answer of due) answer();
  }

  return {
    watch(message, release) {
      return new Watch(message, release, drain);
    },

    answerSoon(message, final, then) {
      const answer = () => {
        // Watches end themselves (wait, cancel): until then the final status stays in memory.
        for (const settle of message.waiters) settle(final);
        then();
      };
      if (answers.push(answer) === 1) setImmediate(answerAll);
    },

    drain() {
      if (drain.drained) return;
      drain.drained = true;
      for (const end of [...drain.waits]) end();
    },
  };
}
