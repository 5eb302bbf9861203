import type { Clock } from '@stratus/core';
import { gcra, type LocalRateLimiter, MemoryRateLimitStore } from '@stratus/resilience';

/**
 * Failed credential checks per client: after `perMinute` failures within a minute (refilled smoothly), the client
 * is refused without a check until some have aged out. What the gateway's authenticators and its admin token use.
 */
export class Lockout {
  readonly #failures: LocalRateLimiter;

  constructor(name: string, perMinute: number, clock?: Clock) {
    this.#failures = gcra({
      name,
      limit: perMinute,
      periodMs: 60_000,
      ...(clock ? { clock } : {}),
      store: new MemoryRateLimitStore(),
    });
  }

  /** Whether the client has used up its failures (reads, takes nothing). */
  locked(client: string): boolean {
    return this.#failures.tryAcquire(client, 0).remaining <= 0;
  }

  failed(client: string): void {
    this.#failures.tryAcquire(client);
  }
}
