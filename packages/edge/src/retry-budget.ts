import type { Clock } from '@stratus/core';

const WINDOW_SECONDS = 10;

/**
 * Retries as a share of requests over the last 10 seconds (Finagle's and Envoy's retry budget): at most
 * `ratio` × requests plus `minPerSecond` × 10 retries in the window. When an upstream is down, retries stop at
 * the budget instead of multiplying its load by the attempts.
 */
export class RetryBudget {
  readonly #requests = new Float64Array(WINDOW_SECONDS);
  readonly #retries = new Float64Array(WINDOW_SECONDS);
  #second = 0;

  constructor(
    readonly ratio: number,
    readonly minPerSecond: number,
    readonly clock: Clock,
  ) {
    this.#second = this.#now();
  }

  request(): void {
    this.#advance();
    const slot = this.#second % WINDOW_SECONDS;
    this.#requests[slot] = (this.#requests[slot] as number) + 1;
  }

  /** Takes one retry from the budget, or says no. */
  tryRetry(): boolean {
    this.#advance();
    let requests = 0;
    let retries = 0;
    for (let i = 0; i < WINDOW_SECONDS; i++) {
      requests += this.#requests[i] as number;
      retries += this.#retries[i] as number;
    }
    if (retries + 1 > this.ratio * requests + this.minPerSecond * WINDOW_SECONDS) return false;
    const slot = this.#second % WINDOW_SECONDS;
    this.#retries[slot] = (this.#retries[slot] as number) + 1;
    return true;
  }

  #now(): number {
    return Math.floor(this.clock.monotonic() / 1000);
  }

  #advance(): void {
    const now = this.#now();
    if (now === this.#second) return;
    const steps = Math.min(now - this.#second, WINDOW_SECONDS);
    for (let i = 1; i <= steps; i++) {
      const slot = (this.#second + i) % WINDOW_SECONDS;
      this.#requests[slot] = 0;
      this.#retries[slot] = 0;
    }
    this.#second = now;
  }
}
