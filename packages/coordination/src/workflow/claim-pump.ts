/**
 * The Scheduler's intake: claims pending steps of the registered definitions while it has room, then sleeps until
 * the next due step (a durable sleep's end, a retry's backoff), a wake-up from the store or the safety poll. It
 * counts the workflows running in this engine, those started here and those it claimed, against `concurrency`.
 */
import type { Clock, TimerHandle } from '@stratus/core';
import type { ClaimedStep, WorkflowStore } from './workflow-store.js';

export interface ClaimPumpOptions {
  readonly store: WorkflowStore;
  readonly clock: Clock;
  readonly schedulerId: string;
  readonly concurrency: number;
  readonly claimBatch: number;
  readonly pollMs: number;
  /** The definitions (`name@version`) registered now. */
  definitions(): readonly string[];
  /** Drives a claimed step; its slot is taken, and given back with `release()`. */
  claimed(step: ClaimedStep): void;
  storeError(error: unknown): void;
}

export class ClaimPump {
  readonly #options: ClaimPumpOptions;
  readonly #store: WorkflowStore;
  readonly #clock: Clock;
  #inFlight = 0;
  #running = false;
  #pumping = false;
  #pumpAgain = false;
  #saturated = false;
  #timer: TimerHandle | undefined;

  constructor(options: ClaimPumpOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#clock = options.clock;
  }

  /** Starts claiming (once). */
  start(): void {
    this.#running = true;
    this.pump();
  }

  /** Stops claiming for good; running workflows still give their slots back. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
  }

  /** Takes a slot for a workflow to run at once; false when not running or full. */
  reserve(): boolean {
    if (!this.#running || this.#inFlight >= this.#options.concurrency) return false;
    this.#inFlight++;
    return true;
  }

  /** Gives back the slot of a workflow this engine stopped driving. */
  release(): void {
    this.#inFlight--;
    if (this.#saturated) this.pump();
  }

  /** Claims what it can run now, then sleeps until the next due step, a wake-up or the safety poll. */
  pump(): void {
    if (!this.#running) return;
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    void this.#claimLoop().finally(() => {
      this.#pumping = false;
      if (this.#pumpAgain) this.pump();
    });
  }

  async #claimLoop(): Promise<void> {
    const { schedulerId, concurrency, claimBatch } = this.#options;
    let waitMs = this.#options.pollMs;
    try {
      do {
        this.#pumpAgain = false;
        this.#saturated = false;
        while (this.#running && this.#options.definitions().length > 0) {
          const room = concurrency - this.#inFlight;
          if (room <= 0) {
            this.#saturated = true;
            break;
          }
          const limit = Math.min(room, claimBatch);
          this.#inFlight += limit;
          let claimed: ClaimedStep[];
          try {
            claimed = await this.#store.claim({
              schedulerId,
              definitions: this.#options.definitions(),
              limit,
              now: this.#clock.now(),
            });
          } finally {
            this.#inFlight -= limit;
          }
          for (const step of claimed) {
            this.#inFlight++;
            this.#options.claimed(step);
          }
          if (claimed.length < limit) break;
        }
      } while (this.#pumpAgain && this.#running);
      const definitions = this.#options.definitions();
      if (!this.#running || definitions.length === 0) return;
      const next = await this.#store.nextAvailableAt(definitions);
      if (next !== undefined) waitMs = Math.min(waitMs, Math.max(0, next - this.#clock.now()));
    } catch (error) {
      this.#options.storeError(error);
    }
    if (!this.#running) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    // Not unref'd: a launched Scheduler keeps its process alive until closed, as a listening server does; a
    // Scheduler process with nothing to claim for a moment must not end.
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.pump();
    }, waitMs);
  }
}
