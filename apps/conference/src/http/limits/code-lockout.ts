/**
 * The lockout after wrong access codes, with backoff, built from sliding-window limiters (@stratus/resilience) so that
 * scaled out every web process shares it: each wrong code counts against the target (a conference, an e-mail) and
 * against the client. A key is locked once it has `after` wrong codes within `firstLockMs`, `2 × after` within
 * `8 × firstLockMs`, or `4 × after` within `64 × firstLockMs`, until enough of them slide out of that window: each
 * level locks about eight times longer than the one before. The right code clears the target's count (so its owner
 * gets in once a lockout ends), never the client's (an attacker could otherwise clear it with a code of their own).
 */
import type { Clock } from '@stratus/core';
import { type RateLimiter, type RateLimitStore, slidingWindowLog } from '@stratus/resilience';
import { TooManyRequestsError } from './too-many-requests.js';

export interface CodeLockoutOptions {
  /** Wrong codes that lock a key at the first level. */
  readonly after: number;
  /** The window of the first level: a burst of `after` wrong codes locks the key about this long. */
  readonly firstLockMs: number;
  readonly store: RateLimitStore;
  readonly clock: Clock;
}

const LEVELS = 3;

export class CodeLockout {
  readonly #levels: readonly RateLimiter[];

  constructor(options: CodeLockoutOptions) {
    this.#levels = Array.from({ length: LEVELS }, (_, level) =>
      slidingWindowLog({
        name: `wrong-access-codes-${level + 1}`,
        limit: options.after * 2 ** level,
        windowMs: options.firstLockMs * 8 ** level,
        store: options.store,
        clock: options.clock,
      }),
    );
  }

  /** Throws TooManyRequestsError while any of `keys` is locked, saying until when (the longest lock). */
  async assertOpen(keys: readonly string[]): Promise<void> {
    const locks = await Promise.all(
      keys.flatMap((key) => this.#levels.map((level) => this.#lock(level, key))),
    );
    let longest: TooManyRequestsError | undefined;
    let longestMs = 0;
    for (const lock of locks) {
      if (lock !== undefined && lock.retryAfterMs >= longestMs) {
        longest = lock.refusal;
        longestMs = lock.retryAfterMs;
      }
    }
    if (longest !== undefined) throw longest;
  }

  /** Counts a wrong code against every key. */
  async failed(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.flatMap((key) => this.#levels.map((level) => level.acquire(key))));
  }

  /** The right code: the target's wrong codes are forgotten. */
  async succeeded(target: string): Promise<void> {
    await Promise.all(this.#levels.map((level) => level.reset(target)));
  }

  async #lock(level: RateLimiter, key: string) {
    const state = await level.acquire(key, 0);
    if (state.remaining > 0) return undefined;
    // A refused request takes nothing and says when the oldest wrong code slides out. Should one have slid out in the
    // meantime, this takes its place (counting as one more wrong code: rare, and on the safe side).
    const refused = await level.acquire(key, 1);
    if (refused.allowed) return undefined;
    const windowMs = level.windowMs ?? 0;
    const refusal = TooManyRequestsError.of('Too many wrong access codes.', refused, level.name, windowMs);
    return { retryAfterMs: refused.retryAfterMs, refusal };
  }
}
