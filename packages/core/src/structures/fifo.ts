/**
 * A FIFO queue with O(1) amortized push and shift (an array with a moving head, compacted when
 * the dead prefix dominates) plus `unshift` for the rare retry that puts a turn back at the head.
 * `Array.prototype.shift` is O(n) on large arrays, which a 500-deep session queue would feel.
 */
export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The item `index` places behind the head, or undefined. */
  at(index: number): T | undefined {
    return index < 0 ? undefined : this.#items[this.#head + index];
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Puts `items` back in front, keeping their order. */
  unshiftAll(items: readonly T[]): void {
    if (items.length <= this.#head) {
      this.#head -= items.length;
      for (let i = 0; i < items.length; i++) this.#items[this.#head + i] = items[i];
    } else {
      this.#items = [...items, ...this.#items.slice(this.#head)];
      this.#head = 0;
    }
  }

  /** Removes and returns every item, in order. */
  drain(): T[] {
    const items = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return items;
  }
}
