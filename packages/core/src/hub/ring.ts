/**
 * A fixed-capacity FIFO ring. `push` on a full ring evicts and returns the oldest item, so the
 * caller can keep a trace of what left (the hub keeps a skeleton of evicted events for cursors).
 */
export class Ring<T> {
  readonly capacity: number;
  private readonly slots: (T | undefined)[];
  private head = 0;
  private size = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.slots = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.size;
  }

  /** Appends `item`; returns the evicted oldest item when the ring was full. */
  push(item: T): T | undefined {
    if (this.capacity === 0) return item;
    // Wrapped by comparison, not `%`: an integer division per publish is measurable.
    if (this.size < this.capacity) {
      const index = this.head + this.size;
      this.slots[index < this.capacity ? index : index - this.capacity] = item;
      this.size++;
      return undefined;
    }
    const evicted = this.slots[this.head];
    this.slots[this.head] = item;
    this.head = this.head + 1 === this.capacity ? 0 : this.head + 1;
    return evicted;
  }

  /** The item at `index` (0 = oldest). */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.size) return undefined;
    return this.slots[(this.head + index) % this.capacity];
  }

  /** Oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.size; i++) out.push(this.slots[(this.head + i) % this.capacity] as T);
    return out;
  }

  /**
   * The items whose key is `>= min`, oldest first. Keys must grow along the ring (hub seqs do),
   * so the start is found by binary search.
   */
  since(min: number, key: (item: T) => number): T[] {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (key(this.at(mid) as T) < min) lo = mid + 1;
      else hi = mid;
    }
    const out: T[] = [];
    for (let i = lo; i < this.size; i++) out.push(this.at(i) as T);
    return out;
  }
}
