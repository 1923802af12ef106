/**
 * The asyncio primitives the baselines are written with — Lock, Semaphore, Condition and an
 * unbounded Queue — with asyncio's semantics: FIFO waiters held in a deque, an uncontended
 * acquire that does not wait, `Semaphore.locked()` true while anyone waits, and a Condition that
 * releases its lock while it waits and takes it back before returning.
 *
 * Waiters live in a deque (as in CPython) rather than an array: a hot session can have tens of
 * thousands of tasks waiting on its lock, and `Array.prototype.shift` would charge the baseline
 * an O(n) cost that Python does not pay. The deque is core's `Fifo`, the one Switchboard's pool
 * uses, so both sides of the comparison pay the same for it.
 */
import { Fifo } from '@switchboard/core';

/** `asyncio.Lock`: acquired in arrival order; release hands the lock to the first waiter. */
export class Lock {
  #locked = false;
  readonly #waiters = new Fifo<() => void>();

  locked(): boolean {
    return this.#locked;
  }

  async acquire(): Promise<void> {
    if (!this.#locked && this.#waiters.length === 0) {
      this.#locked = true;
      return;
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#locked = false;
    else next();
  }
}

/** `asyncio.Semaphore`: `value` slots, FIFO waiters, `locked()` when none is free or anyone waits. */
export class Semaphore {
  #value: number;
  readonly #waiters = new Fifo<() => void>();

  constructor(value: number) {
    this.#value = value;
  }

  locked(): boolean {
    return this.#value === 0 || this.#waiters.length > 0;
  }

  async acquire(): Promise<void> {
    if (!this.locked()) {
      this.#value -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#value += 1;
    else next();
  }
}

/** `asyncio.Condition(lock)`: `wait` releases the lock, sleeps until notified, then re-acquires it. */
export class Condition {
  readonly #lock: Lock;
  #waiters: Array<() => void> = [];

  constructor(lock: Lock) {
    this.#lock = lock;
  }

  acquire(): Promise<void> {
    return this.#lock.acquire();
  }

  release(): void {
    this.#lock.release();
  }

  async wait(): Promise<void> {
    this.#lock.release();
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
    await this.#lock.acquire();
  }

  notifyAll(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** An unbounded `asyncio.Queue`: `put` never waits; `get` waits for an item, getters served in order. */
export class Queue<T> {
  readonly #items = new Fifo<T>();
  readonly #getters = new Fifo<(item: T) => void>();

  async put(item: T): Promise<void> {
    const getter = this.#getters.shift();
    if (getter === undefined) this.#items.push(item);
    else getter(item);
  }

  async get(): Promise<T> {
    if (this.#items.length > 0) return this.#items.shift() as T;
    return new Promise<T>((resolve) => this.#getters.push(resolve));
  }
}
