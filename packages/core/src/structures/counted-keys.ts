/**
 * Keys with a count of what is under way for each (e.g. writes issued and not yet settled): `has`
 * is true from the first `add` of a key until as many `delete`s; a key at zero takes no memory.
 */
export class CountedKeys {
  readonly #counts = new Map<string, number>();

  get size(): number {
    return this.#counts.size;
  }

  has(key: string): boolean {
    return this.#counts.has(key);
  }

  add(key: string): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  delete(key: string): void {
    const left = (this.#counts.get(key) ?? 1) - 1;
    if (left === 0) this.#counts.delete(key);
    else this.#counts.set(key, left);
  }
}
