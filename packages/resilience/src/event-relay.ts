import { EventEmitter, type Listener, type StratusEvent, type Unsubscribe } from '@stratus/core';

interface Subscription<E> {
  readonly listener: Listener<E>;
  offs: Unsubscribe[];
}

/**
 * The `events` of a policy made of other policies (a pipeline, a registry handle): listening here listens
 * to every source. It never re-emits, so nothing reaches the diagnostics channel twice, and it subscribes
 * to the sources only while someone listens here, so an unobserved composite costs its policies nothing.
 * `setSources` moves every listener to new sources (a registry handle after a reload).
 */
export class EventRelay<E extends StratusEvent> extends EventEmitter<E> {
  #sources: readonly EventEmitter<E>[];
  readonly #subscriptions = new Set<Subscription<E>>();

  constructor(sources: readonly EventEmitter<E>[]) {
    super();
    this.#sources = sources;
  }

  override get active(): boolean {
    for (const source of this.#sources) if (source.active) return true;
    return false;
  }

  override on(listener: Listener<E>): Unsubscribe {
    const subscription: Subscription<E> = { listener, offs: subscribeAll(this.#sources, listener) };
    this.#subscriptions.add(subscription);
    return () => {
      if (!this.#subscriptions.delete(subscription)) return;
      for (const off of subscription.offs) off();
    };
  }

  setSources(sources: readonly EventEmitter<E>[]): void {
    this.#sources = sources;
    for (const subscription of this.#subscriptions) {
      for (const off of subscription.offs) off();
      subscription.offs = subscribeAll(sources, subscription.listener);
    }
  }
}

function subscribeAll<E extends StratusEvent>(
  sources: readonly EventEmitter<E>[],
  listener: Listener<E>,
): Unsubscribe[] {
  return sources.map((source) => source.on(listener));
}
