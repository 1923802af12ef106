import { WakeTimer } from '@switchboard/core';
import { untilAborted } from './until-aborted.js';

/** A session held by a worker: its turns go to `slot` while it is bound. */
export interface Binding {
  readonly session: string;
  readonly slot: number;
  /** Turns of the session running now. */
  running: number;
  /** When its last turn ended (ms). */
  lastUsedAt: number;
  /** Set while its worker may still run a cancelled turn: its next turn waits for it. */
  settling?: Promise<void> | undefined;
}

export interface SessionBindingsOptions {
  /** Most sessions bound at once (`max_active_sessions`); `Infinity` for no bound. */
  maxActive: number;
  /** A session bound but idle this long is released (`idle_timeout`). */
  idleTimeoutMs: number;
  now: () => number;
  /** `session` was released from `slot` after `idleTimeoutMs` idle: tell its worker. */
  onRelease(session: string, slot: number): void;
}

interface Waiter {
  session: string;
  choose: () => number;
  resolve(binding: Binding): void;
  reject(error: unknown): void;
}

/**
 * Session affinity and session limits (a mechanism apart from concurrency slots, as in a model gateway's Redis concurrency control). A
 * session is bound to a worker by its first turn and stays there while it is active; idle for
 * `idleTimeoutMs` it is released. At most `maxActive` sessions are bound: the turn of a further
 * session waits, first come first bound, until one is released — it is not refused. Costs: a bind,
 * a turn's end and a slot's count are O(1); an expiry scans the bound sessions (at most
 * `maxActive` when set).
 */
export class SessionBindings {
  readonly #options: SessionBindingsOptions;
  readonly #bindings = new Map<string, Binding>();
  /** Bound sessions per slot, kept with every bind and unbind: a new session's choice reads it. */
  readonly #perSlot = new Map<number, number>();
  #waiters: Waiter[] = [];
  readonly #expiry: WakeTimer;

  constructor(options: SessionBindingsOptions) {
    this.#options = options;
    this.#expiry = new WakeTimer(() => this.#expire(), options.now);
  }

  /** Sessions bound now (`switchboard_pipeline_sessions`). */
  get size(): number {
    return this.#bindings.size;
  }

  /** Turns waiting for a session to be released. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Sessions bound to `slot`. */
  countOn(slot: number): number {
    return this.#perSlot.get(slot) ?? 0;
  }

  /**
   * The binding of `session` with one more running turn: the existing one, or a new one on the
   * slot `choose` picks (it may throw: no usable worker). Waits while `maxActive` sessions are
   * bound; rejects with `abort(signal)`'s error when the signal fires first.
   */
  acquire(
    session: string,
    choose: () => number,
    signal: AbortSignal,
    abort: (signal: AbortSignal) => unknown,
  ): Promise<Binding> {
    if (signal.aborted) return Promise.reject(abort(signal));
    const bound = this.#bindings.get(session);
    if (bound?.settling !== undefined) {
      // Its binding may be gone meanwhile (the worker killed): bind again from the start.
      return untilAborted(bound.settling, signal, abort).then(() =>
        this.acquire(session, choose, signal, abort),
      );
    }
    if (bound !== undefined) return Promise.resolve(this.#use(bound));
    if (this.#bindings.size < this.#options.maxActive && this.#waiters.length === 0) {
      return Promise.resolve(this.#use(this.#bind(session, choose())));
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#waiters = this.#waiters.filter((entry) => entry !== waiter);
        reject(abort(signal));
      };
      const waiter: Waiter = {
        session,
        choose,
        resolve: (binding) => {
          signal.removeEventListener('abort', onAbort);
          resolve(binding);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** A turn of `binding` ended: its session may expire `idleTimeoutMs` after its last one. */
  done(binding: Binding): void {
    binding.running -= 1;
    binding.lastUsedAt = this.#options.now();
    if (binding.running === 0 && this.#bindings.get(binding.session) === binding) {
      this.#expiry.arm(binding.lastUsedAt + this.#options.idleTimeoutMs);
    }
  }

  /**
   * A turn of `binding` ended while its worker may still run it (cancelled, not answered yet): the
   * session stays busy — its next turn waits, it does not expire — until `finished`.
   */
  doneWhen(binding: Binding, finished: Promise<void>): void {
    const settling = finished.then(() => {
      if (binding.settling === settling) binding.settling = undefined;
      this.done(binding);
    });
    binding.settling = settling;
  }

  /** The worker of `slot` is gone with its context: its sessions are unbound, without a release. */
  dropSlot(slot: number): void {
    // Deleting the entry being visited is safe in a Map iteration.
    for (const binding of this.#bindings.values()) if (binding.slot === slot) this.#unbind(binding);
    this.#grant();
  }

  /**
   * Unbinds the session of `binding` at once, without a release (its worker never got it, e.g. the
   * slot failed meanwhile), so that it holds no place for `idleTimeoutMs`. No-op once unbound.
   */
  unbind(binding: Binding): void {
    if (this.#bindings.get(binding.session) !== binding) return;
    this.#unbind(binding);
    this.#grant();
  }

  /** Fails every waiting turn with `error` and stops the expiry timer (the pipeline stops). */
  close(error: unknown): void {
    this.#expiry.cancel();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }

  #bind(session: string, slot: number): Binding {
    const binding: Binding = { session, slot, running: 0, lastUsedAt: this.#options.now() };
    this.#bindings.set(session, binding);
    this.#perSlot.set(slot, this.countOn(slot) + 1);
    return binding;
  }

  #unbind(binding: Binding): void {
    this.#bindings.delete(binding.session);
    this.#perSlot.set(binding.slot, this.countOn(binding.slot) - 1);
  }

  #use(binding: Binding): Binding {
    binding.running += 1;
    return binding;
  }

  /**
   * Lets waiting turns go: those whose session was bound meanwhile (by an earlier waiter of the
   * same session), and new sessions oldest first while there is room.
   */
  #grant(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) {
      const bound = this.#bindings.get(waiter.session);
      if (bound !== undefined) waiter.resolve(this.#use(bound));
      else if (this.#bindings.size >= this.#options.maxActive) this.#waiters.push(waiter);
      else {
        try {
          waiter.resolve(this.#use(this.#bind(waiter.session, waiter.choose())));
        } catch (error) {
          waiter.reject(error);
        }
      }
    }
  }

  #expire(): void {
    const now = this.#options.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [session, binding] of this.#bindings) {
      if (binding.running > 0) continue;
      const expiresAt = binding.lastUsedAt + this.#options.idleTimeoutMs;
      if (expiresAt > now) {
        next = Math.min(next, expiresAt);
        continue;
      }
      this.#unbind(binding);
      this.#options.onRelease(session, binding.slot);
    }
    this.#expiry.arm(next);
    this.#grant();
  }
}
