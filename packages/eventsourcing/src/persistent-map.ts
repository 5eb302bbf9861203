/** Buckets per map: a change copies the bucket list and one bucket, about 1/64 of the entries. */
const BUCKETS = 64;

/** FNV-1a over the key's UTF-16 code units, folded to a bucket index. */
function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % BUCKETS;
}

/**
 * An immutable map for aggregate and process states, whose `set` and `delete` return a new map sharing all but one
 * of its buckets with the old one. An evolve that copies a plain Map costs time in proportion to its size: a
 * conference holding thousands of pending reservations copied them all for every one reserved or committed, which
 * grew with the backlog until throughput collapsed. Here a change copies about 1/64 of the entries.
 *
 * String keys. Iteration goes bucket by bucket, in insertion order within a bucket; two maps with the same entries
 * have equal buckets, so deep equality (node:assert) compares contents.
 */
export class PersistentMap<V> {
  /** The entries by hash bucket (a public field so that deep equality sees them). */
  readonly buckets: readonly (ReadonlyMap<string, V> | undefined)[];
  readonly size: number;

  private constructor(buckets: readonly (ReadonlyMap<string, V> | undefined)[], size: number) {
    this.buckets = buckets;
    this.size = size;
  }

  static empty<V>(): PersistentMap<V> {
    return new PersistentMap<V>(new Array(BUCKETS).fill(undefined), 0);
  }

  static from<V>(entries: Iterable<readonly [string, V]>): PersistentMap<V> {
    const buckets: (Map<string, V> | undefined)[] = new Array(BUCKETS).fill(undefined);
    let size = 0;
    for (const [key, value] of entries) {
      const i = bucketOf(key);
      const bucket = buckets[i] ?? new Map<string, V>();
      buckets[i] = bucket;
      if (!bucket.has(key)) size++;
      bucket.set(key, value);
    }
    return new PersistentMap(buckets, size);
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.buckets[bucketOf(key)]?.has(key) ?? false;
  }

  /** A map with `key` set to `value`. */
  set(key: string, value: V): PersistentMap<V> {
    const i = bucketOf(key);
    const bucket = new Map(this.buckets[i]);
    const added = !bucket.has(key);
    bucket.set(key, value);
    return this.#with(i, bucket, added ? this.size + 1 : this.size);
  }

  /** A map without `key` (this one when it has no such key). */
  delete(key: string): PersistentMap<V> {
    const i = bucketOf(key);
    const old = this.buckets[i];
    if (old === undefined || !old.has(key)) return this;
    const bucket = new Map(old);
    bucket.delete(key);
    return this.#with(i, bucket.size === 0 ? undefined : bucket, this.size - 1);
  }

  *entries(): IterableIterator<[string, V]> {
    for (const bucket of this.buckets) if (bucket !== undefined) yield* bucket.entries();
  }

  *keys(): IterableIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): IterableIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  #with(index: number, bucket: ReadonlyMap<string, V> | undefined, size: number): PersistentMap<V> {
    const buckets = this.buckets.slice();
    buckets[index] = bucket;
    return new PersistentMap(buckets, size);
  }
}
