/** An element of an `IndexedHeap`: the heap keeps its position here for O(log n) removal. */
export interface HeapNode {
  /** Position in the heap that holds the node, -1 when in none. A node is in one heap at most. */
  heapIndex: number;
}

/**
 * A binary min-heap whose nodes know their position, so that removing or re-keying any node is
 * O(log n) — what lets the pool move a session between "ready" and "delayed" without a scan.
 */
export class IndexedHeap<T extends HeapNode> {
  readonly #nodes: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  /** `before(a, b)` is true when `a` must come out before `b`. */
  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#nodes.length;
  }

  peek(): T | undefined {
    return this.#nodes[0];
  }

  push(node: T): void {
    node.heapIndex = this.#nodes.length;
    this.#nodes.push(node);
    this.#up(node.heapIndex);
  }

  pop(): T | undefined {
    const top = this.#nodes[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Removes `node` if this heap holds it. */
  remove(node: T): void {
    const index = node.heapIndex;
    if (index < 0 || this.#nodes[index] !== node) return;
    const last = this.#nodes.pop() as T;
    node.heapIndex = -1;
    if (last === node) return;
    this.#nodes[index] = last;
    last.heapIndex = index;
    this.#down(index);
    this.#up(last.heapIndex);
  }

  /** Restores order after `node`'s key changed. */
  update(node: T): void {
    this.#up(node.heapIndex);
    this.#down(node.heapIndex);
  }

  /**
   * The first `count` nodes in order, left in place: a best-first walk of the heap's tree, so
   * O(count log count) whatever the heap's size (for operators' views of the oldest entries).
   */
  first(count: number): T[] {
    const nodes = this.#nodes;
    const taken: T[] = [];
    // The walk's frontier: positions whose parents were taken, the best one next.
    const frontier = new IndexedHeap<{ index: number; heapIndex: number }>((a, b) =>
      this.#before(nodes[a.index] as T, nodes[b.index] as T),
    );
    if (nodes.length > 0) frontier.push({ index: 0, heapIndex: -1 });
    while (taken.length < count) {
      const next = frontier.pop();
      if (next === undefined) break;
      taken.push(nodes[next.index] as T);
      for (const child of [2 * next.index + 1, 2 * next.index + 2]) {
        if (child < nodes.length) frontier.push({ index: child, heapIndex: -1 });
      }
    }
    return taken;
  }

  has(node: T): boolean {
    return node.heapIndex >= 0 && this.#nodes[node.heapIndex] === node;
  }

  #up(start: number): void {
    const nodes = this.#nodes;
    let index = start;
    const node = nodes[index] as T;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = nodes[parentIndex] as T;
      if (!this.#before(node, parent)) break;
      nodes[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    nodes[index] = node;
    node.heapIndex = index;
  }

  #down(start: number): void {
    const nodes = this.#nodes;
    const length = nodes.length;
    let index = start;
    const node = nodes[index] as T;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && this.#before(nodes[right] as T, nodes[left] as T) ? right : left;
      const childNode = nodes[child] as T;
      if (!this.#before(childNode, node)) break;
      nodes[index] = childNode;
      childNode.heapIndex = index;
      index = child;
    }
    nodes[index] = node;
    node.heapIndex = index;
  }
}
