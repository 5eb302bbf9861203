import type { TimerHandle } from '@stratus/core';
import { TimeoutError } from '../errors.js';
import type { CircuitSyncHost } from './circuit-sync.js';
import type { CircuitStateStore } from './state-store.js';

const noop = () => {};

/**
 * A breaker's connection to its store: every call bounded by a timeout, calls run one at a time (so this
 * instance's own writes land in the order it made them), availability tracked and reported on change, and a
 * periodic background task on the breaker's clock with an unref'd timer.
 */
export class StoreLink {
  readonly store: CircuitStateStore;
  readonly #host: CircuitSyncHost;
  readonly #timeoutMs: number;
  #available = true;
  #tail: Promise<void> = Promise.resolve();
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(host: CircuitSyncHost, store: CircuitStateStore, timeoutMs: number) {
    this.#host = host;
    this.store = store;
    this.#timeoutMs = timeoutMs;
  }

  get available(): boolean {
    return this.#available;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Calls the store, failing with TimeoutError if it does not answer in time. */
  call<T>(request: (store: CircuitStateStore) => Promise<T>): Promise<T> {
    const clock = this.#host.clock;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = clock.setTimeout(
        () => {
          if (settled) return;
          settled = true;
          const error = new TimeoutError(this.#timeoutMs);
          this.#setAvailable(false, error);
          reject(error);
        },
        this.#timeoutMs,
        { unref: true },
      );
      const onValue = (value: T) => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        this.#setAvailable(true);
        resolve(value);
      };
      const onError = (error: unknown) => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        this.#setAvailable(false, error);
        reject(error);
      };
      try {
        request(this.store).then(onValue, onError);
      } catch (error) {
        onError(error);
      }
    });
  }

  /** Runs `task` after every task queued before it has settled. */
  serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task);
    this.#tail = run.then(noop, noop);
    return run;
  }

  /** Runs `tick` every `intervalMs` (measured from the end of the previous run) until stop(). */
  every(intervalMs: number, tick: () => Promise<void>): void {
    const arm = () => {
      if (this.#stopped) return;
      this.#timer = this.#host.clock.setTimeout(
        () => {
          this.#timer = undefined;
          tick().then(arm, arm);
        },
        intervalMs,
        { unref: true },
      );
    };
    arm();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#host.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #setAvailable(available: boolean, error?: unknown): void {
    if (available === this.#available) return;
    this.#available = available;
    this.#host.storeAvailabilityChanged(available, error);
  }
}
