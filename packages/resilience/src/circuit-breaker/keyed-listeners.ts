import type { SharedCircuitRecord } from './state-store.js';

export type RecordListener = (record: SharedCircuitRecord) => void;

/**
 * The change listeners of a store, per key (a circuit, or the channel it is published on). Every `add` is a
 * subscription of its own, even for a function added twice, and removing one never removes another.
 */
export class KeyedListeners {
  readonly #byKey = new Map<string, Set<RecordListener>>();

  /** Keys with at least one listener. */
  get keyCount(): number {
    return this.#byKey.size;
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  of(key: string): Iterable<RecordListener> {
    return this.#byKey.get(key) ?? [];
  }

  /** Adds a subscription. The returned function removes it and answers whether that left `key` without any. */
  add(key: string, listener: RecordListener): () => boolean {
    let listeners = this.#byKey.get(key);
    if (listeners === undefined) {
      listeners = new Set();
      this.#byKey.set(key, listeners);
    }
    const entry: RecordListener = (record) => listener(record);
    listeners.add(entry);
    return () => {
      const current = this.#byKey.get(key);
      if (!current?.delete(entry) || current.size > 0) return false;
      this.#byKey.delete(key);
      return true;
    };
  }
}
