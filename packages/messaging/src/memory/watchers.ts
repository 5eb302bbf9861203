// The memory backend's watchers: listeners per queue, woken on a microtask when messages may have become available.
export class Watchers {
  readonly #byQueue = new Map<string, Set<() => void>>();

  watch(queue: string, listener: () => void): () => void {
    let listeners = this.#byQueue.get(queue);
    if (listeners === undefined) {
      listeners = new Set();
      this.#byQueue.set(queue, listeners);
    }
    // Wrapped so the same function can watch twice and unwatch once.
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      listeners.delete(entry);
      if (listeners.size === 0 && this.#byQueue.get(queue) === listeners) this.#byQueue.delete(queue);
    };
  }

  notify(queue: string): void {
    const listeners = this.#byQueue.get(queue);
    if (listeners === undefined) return;
    queueMicrotask(() => {
      for (const listener of listeners) listener();
    });
  }

  clear(): void {
    this.#byQueue.clear();
  }
}
