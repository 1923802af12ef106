/** An element of an `IndexedSet`: the set keeps its position here for O(1) removal. */
export interface SetNode {
  /** Position in the set that holds the node, -1 when in none. A node is in one set at most. */
  setIndex: number;
}

/**
 * An unordered set of nodes that know their position: add and delete are O(1) and never hash.
 * For sets with one add and one delete per element, like the turns running now: on a long-lived
 * `Set` or `Map` that churn makes V8 rehash its table in the old generation over and over, and the
 * discarded tables keep young objects alive through the next scavenges.
 */
export class IndexedSet<T extends SetNode> {
  readonly #nodes: T[] = [];

  get size(): number {
    return this.#nodes.length;
  }

  add(node: T): void {
    node.setIndex = this.#nodes.length;
    this.#nodes.push(node);
  }

  /** Removes `node` if this set holds it; the last node takes its place. */
  delete(node: T): void {
    const index = node.setIndex;
    if (index < 0 || this.#nodes[index] !== node) return;
    const last = this.#nodes.pop() as T;
    node.setIndex = -1;
    if (last === node) return;
    this.#nodes[index] = last;
    last.setIndex = index;
  }

  /** A snapshot of the nodes (order unspecified): safe to iterate while the set changes. */
  values(): T[] {
    return this.#nodes.slice();
  }
}
