import diagnosticsChannel from 'node:diagnostics_channel';

/**
 * Every Stratus component emits typed events. Each event names its component kind (`component`), the
 * instance (`name`), what happened (`type`) and when (`at`, epoch ms from the component's clock).
 */
export interface StratusEvent {
  readonly component: string;
  readonly name: string;
  readonly type: string;
  readonly at: number;
}

export type Listener<E> = (event: E) => void;
export type Unsubscribe = () => void;

/**
 * All events of all components are also published on this diagnostics channel, so one telemetry adapter
 * (OpenTelemetry, pino) can observe a whole process without wiring each instance.
 */
export const stratusEventChannel = diagnosticsChannel.channel('stratus:events');

/**
 * A small typed emitter. `emit` costs one branch when nobody listens, which keeps the hot path of
 * policies cheap; the `active` getter lets callers skip building an event object altogether.
 */
/**
 * A listener as the emitter holds it: a method-style signature, which TypeScript checks bivariantly, so that an
 * emitter of narrower events still counts as one of StratusEvent where sources are checked (the built .d.ts hides
 * private fields, so only code compiled from source, as the examples are, would see the difference).
 */
type HeldListener<E> = { bivarianceHack(event: E): void }['bivarianceHack'];

export class EventEmitter<E extends StratusEvent> {
  #listeners: HeldListener<E>[] = [];

  /** True when someone listens here or on the process-wide channel. */
  get active(): boolean {
    return this.#listeners.length > 0 || stratusEventChannel.hasSubscribers;
  }

  on(listener: Listener<E>): Unsubscribe {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /** Resolves with the next event matching `predicate` (handy in tests and startup code). */
  once<T extends E = E>(predicate: (event: E) => event is T): Promise<T>;
  once(predicate?: (event: E) => boolean): Promise<E>;
  once(predicate: (event: E) => boolean = () => true): Promise<E> {
    return new Promise((resolve) => {
      const off = this.on((event) => {
        if (predicate(event)) {
          off();
          resolve(event);
        }
      });
    });
  }

  emit(event: E): void {
    // Snapshot: listeners may unsubscribe while we iterate (on() and off() copy the array).
    const listeners = this.#listeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        listeners[i]!(event);
      } catch (error) {
        // A broken listener must never break the operation it observes.
        process.emitWarning(`Stratus event listener threw: ${String(error)}`, 'StratusListenerWarning');
      }
    }
    if (stratusEventChannel.hasSubscribers) stratusEventChannel.publish(event);
  }
}
