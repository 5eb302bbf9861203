/**
 * The local tier: an in-process LRU bounded by entry count, with a deadline per entry. A Map finds the node,
 * a doubly linked list keeps recency (head = least recently used): every operation is O(1), and a hit only
 * relinks two nodes and allocates nothing. (Moving a key to the end of a Map by delete + set looks cheaper but
 * leaves a hole per move that V8 compacts by rehashing: about 10x slower on a hot key.)
 */
export interface LruEntry<T = unknown> {
  readonly value: T;
  /** Epoch ms until which the entry is fresh. */
  readonly freshUntil: number;
  /** Epoch ms until which the entry may still be served stale (>= freshUntil); it is dropped after. */
  readonly staleUntil: number;
}

interface Node {
  readonly key: string;
  entry: LruEntry;
  prev: Node | undefined;
  next: Node | undefined;
}

export class LocalLru {
  readonly #nodes = new Map<string, Node>();
  /** Least recently used. */
  #head: Node | undefined;
  /** Most recently used. */
  #tail: Node | undefined;
  readonly maxEntries: number;

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.#nodes.size;
  }

  /** The entry, if present and not past `staleUntil` at `now`; a found entry becomes the most recently used. */
  get(key: string, now: number): LruEntry | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    if (node.entry.staleUntil <= now) {
      this.#remove(node);
      return undefined;
    }
    if (node !== this.#tail) {
      this.#unlink(node);
      this.#append(node);
    }
    return node.entry;
  }

  /** Present without touching recency or expiry (for tests and introspection). */
  has(key: string): boolean {
    return this.#nodes.has(key);
  }

  set(key: string, entry: LruEntry): void {
    const existing = this.#nodes.get(key);
    if (existing !== undefined) {
      existing.entry = entry;
      if (existing !== this.#tail) {
        this.#unlink(existing);
        this.#append(existing);
      }
      return;
    }
    if (this.#nodes.size >= this.maxEntries && this.#head !== undefined) this.#remove(this.#head);
    const node: Node = { key, entry, prev: undefined, next: undefined };
    this.#nodes.set(key, node);
    this.#append(node);
  }

  delete(key: string): boolean {
    const node = this.#nodes.get(key);
    if (node === undefined) return false;
    this.#remove(node);
    return true;
  }

  clear(): void {
    this.#nodes.clear();
    this.#head = undefined;
    this.#tail = undefined;
  }

  /** Keys from least to most recently used. */
  keys(): string[] {
    const keys: string[] = [];
    for (let node = this.#head; node !== undefined; node = node.next) keys.push(node.key);
    return keys;
  }

  #remove(node: Node): void {
    this.#nodes.delete(node.key);
    this.#unlink(node);
  }

  #unlink(node: Node): void {
    if (node.prev === undefined) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
  }

  #append(node: Node): void {
    node.prev = this.#tail;
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
  }
}
