/**
 * A background part kept running: the Stratus event subscriptions and view runners stop for good at the first read
 * or lease renewal that fails (the database restarting, say), so each is started anew, a second later, whenever it
 * stops on an error, until the process stops it. While it waits it counts as down (the readiness says 503).
 */
import type { Clock, TimerHandle } from '@stratus/core';

/** A part just started: itself, and what settles when it stops (rejects when it stopped on an error). */
export interface StartedPart<Part> {
  readonly part: Part;
  readonly done: Promise<void>;
}

export interface KeptRunningOptions {
  readonly clock: Clock;
  /** How long after a failure the part starts again; default 1 s. */
  readonly restartMs?: number;
  /** Hears each failure, before the restart. */
  readonly onFailure: (error: unknown) => void;
}

export class KeptRunning<Part extends { stop(): Promise<void> }> {
  readonly #start: () => StartedPart<Part>;
  readonly #clock: Clock;
  readonly #restartMs: number;
  readonly #onFailure: (error: unknown) => void;
  #part: Part | undefined;
  #restart: TimerHandle | undefined;
  #stopped = false;

  /** Starts the part at once. */
  constructor(start: () => StartedPart<Part>, options: KeptRunningOptions) {
    this.#start = start;
    this.#clock = options.clock;
    this.#restartMs = options.restartMs ?? 1000;
    this.#onFailure = options.onFailure;
    this.#launch();
  }

  /** The part running now; undefined while it waits to start again. */
  get part(): Part | undefined {
    return this.#part;
  }

  /** Stops the part (and any restart to come). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#restart !== undefined) this.#clock.clearTimeout(this.#restart);
    await this.#part?.stop();
  }

  #launch(): void {
    this.#restart = undefined;
    let started: StartedPart<Part>;
    try {
      started = this.#start();
    } catch (error) {
      this.#failed(error);
      return;
    }
    const { part, done } = started;
    this.#part = part;
    done.catch((error: unknown) => {
      if (this.#stopped || this.#part !== part) return;
      this.#part = undefined;
      this.#failed(error);
    });
  }

  #failed(error: unknown): void {
    this.#onFailure(error);
    if (!this.#stopped) this.#restart = this.#clock.setTimeout(() => this.#launch(), this.#restartMs);
  }
}
