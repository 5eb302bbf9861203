import { hostname } from 'node:os';
import {
  assertCount,
  assertFunction,
  assertInteger,
  type Backoff,
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  OperationCancelledError,
  randomId,
  type StratusEvent,
  sleep,
  systemClock,
} from '@stratus/core';
import { LockTimeoutError } from './errors.js';
import { checkLeaseTiming, LeaseKeeper, type LeaseLossReason } from './lease-keeper.js';
import type { LeaseStore } from './lease-store.js';

export interface DistributedLockOptions {
  readonly store: LeaseStore;
  /** The lock's name: every process locking the same name contends for it. */
  readonly name: string;
  /** Holders at once: 1 for a mutex (default), more for a semaphore. Use the same limit everywhere for a name. */
  readonly limit?: number;
  /** Lease duration: a holder that dies frees its slot this long after its last renewal; default 30 s. */
  readonly ttlMs?: number;
  /** Renewal period while held; default ttlMs / 3. */
  readonly renewEveryMs?: number;
  /** A holder that could not renew gives up this long before its lease ends; default ttlMs / 10 (at most 1 s). */
  readonly safetyMarginMs?: number;
  /** How long `acquire` and `using` wait for a slot by default; default 10 s (0: try once). */
  readonly waitMs?: number;
  /** Delays between attempts while waiting; default exponential from 10 ms to 500 ms with jitter. */
  readonly retryBackoff?: Backoff;
  /** Prefix of this process's holder ids; default `<host>-<pid>-<random>`. */
  readonly ownerPrefix?: string;
  readonly clock?: Clock;
}

export interface AcquireLockOptions {
  /** Overrides the lock's waitMs. */
  readonly waitMs?: number;
  readonly signal?: AbortSignal;
}

/** A held slot of a lock. */
export interface LockHandle {
  readonly name: string;
  /** The fencing token of this hold: pass it to guarded stores (see fencing.ts). */
  readonly token: number;
  /** Aborts the moment the hold is lost (renewal refused or impossible) or released. */
  readonly signal: AbortSignal;
  readonly held: boolean;
  /** Gives the slot back; false if it had already been lost. */
  release(): Promise<boolean>;
}

type LockEventDetail =
  | {
      readonly type: 'acquired';
      readonly token: number;
      readonly waitedMs: number;
      readonly attempts: number;
    }
  | { readonly type: 'released'; readonly token: number; readonly heldMs: number }
  | { readonly type: 'lost'; readonly token: number; readonly reason: Exclude<LeaseLossReason, 'released'> }
  | { readonly type: 'timed-out'; readonly waitedMs: number; readonly attempts: number }
  | { readonly type: 'renewal-error'; readonly token: number; readonly error: unknown };

export type LockEvent = StratusEvent & { readonly component: 'lock' } & LockEventDetail;

/**
 * A distributed mutex (limit 1) or semaphore (limit N) on a lease store: each hold has a fencing token, is renewed
 * while held, and its signal aborts if the hold is lost, so the work it protects can stop; a holder that dies frees
 * its slot when its lease expires.
 */
export class DistributedLock {
  readonly name: string;
  readonly limit: number;
  readonly events = new EventEmitter<LockEvent>();
  readonly #store: LeaseStore;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #renewEveryMs: number;
  readonly #marginMs: number;
  readonly #waitMs: number;
  readonly #backoff: Backoff;
  readonly #ownerPrefix: string;
  #holds = 0;

  constructor(options: DistributedLockOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidOptionsError('options', 'expected an object');
    }
    const { store, name, limit = 1, ttlMs = 30_000, waitMs = 10_000, clock = systemClock } = options;
    if (typeof store?.acquire !== 'function' || typeof store.renew !== 'function') {
      throw new InvalidOptionsError('store', 'expected a LeaseStore');
    }
    if (typeof name !== 'string' || name.length === 0 || name.length > 200) {
      throw new InvalidOptionsError('name', 'expected a string of 1 to 200 characters');
    }
    assertInteger('limit', limit, 1);
    const timing = checkLeaseTiming(ttlMs, options.renewEveryMs, options.safetyMarginMs, 'ttlMs');
    assertCount('waitMs', waitMs, 0);
    const ownerPrefix = options.ownerPrefix ?? `${hostname()}-${process.pid}-${randomId(4)}`;
    if (typeof ownerPrefix !== 'string' || ownerPrefix.length === 0 || ownerPrefix.length > 160) {
      throw new InvalidOptionsError('ownerPrefix', 'expected a string of 1 to 160 characters');
    }
    const backoff =
      options.retryBackoff ?? exponentialBackoff({ initialMs: 10, maxMs: 500, jitter: 'equal' });
    if (typeof backoff?.delay !== 'function')
      throw new InvalidOptionsError('retryBackoff', 'expected a Backoff');
    this.#store = store;
    this.name = name;
    this.limit = limit;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#renewEveryMs = timing.renewEveryMs;
    this.#marginMs = timing.safetyMarginMs;
    this.#waitMs = waitMs;
    this.#backoff = backoff;
    this.#ownerPrefix = ownerPrefix;
  }

  /** One attempt: a hold, or undefined when every slot is taken. */
  tryAcquire(): Promise<LockHandle | undefined> {
    return this.#attempt(`${this.#ownerPrefix}:${++this.#holds}`, this.#clock.monotonic(), 1);
  }

  /** Waits up to `waitMs` for a slot; rejects with LockTimeoutError, or OperationCancelledError on abort. */
  async acquire(options: AcquireLockOptions = {}): Promise<LockHandle> {
    const waitMs = options.waitMs ?? this.#waitMs;
    assertCount('waitMs', waitMs, 0);
    const { signal } = options;
    const owner = `${this.#ownerPrefix}:${++this.#holds}`;
    const started = this.#clock.monotonic();
    let previous = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw new OperationCancelledError(signal.reason);
      const handle = await this.#attempt(owner, started, attempt);
      if (handle !== undefined) return handle;
      const waited = this.#clock.monotonic() - started;
      const delay = Math.min(this.#backoff.delay(attempt, previous), waitMs - waited);
      if (delay <= 0) {
        this.#emit({ type: 'timed-out', waitedMs: waited, attempts: attempt });
        throw new LockTimeoutError(this.name, waited);
      }
      previous = delay;
      await sleep(this.#clock, delay, signal);
    }
  }

  /**
   * Runs `work` holding a slot, then releases it (also when `work` throws). `work` gets the hold: pass its token to
   * fenced stores and stop when its signal aborts (the hold was lost).
   */
  async using<T>(work: (hold: LockHandle) => T | Promise<T>, options: AcquireLockOptions = {}): Promise<T> {
    assertFunction('work', work);
    const hold = await this.acquire(options);
    try {
      return await work(hold);
    } finally {
      await hold.release();
    }
  }

  async #attempt(owner: string, started: number, attempt: number): Promise<LockHandle | undefined> {
    const sentAt = this.#clock.monotonic();
    const result = await this.#store.acquire({
      name: this.name,
      owner,
      ttlMs: this.#ttlMs,
      now: this.#clock.now(),
      limit: this.limit,
    });
    if (!result.acquired) return undefined;
    const { grant } = result;
    const since = this.#clock.monotonic();
    const keeper = new LeaseKeeper({
      store: this.#store,
      clock: this.#clock,
      grant,
      sentAt,
      ttlMs: this.#ttlMs,
      renewEveryMs: this.#renewEveryMs,
      safetyMarginMs: this.#marginMs,
      onRenewalError: (error) => this.#emit({ type: 'renewal-error', token: grant.token, error }),
      onLost: (reason) => {
        if (reason !== 'released') this.#emit({ type: 'lost', token: grant.token, reason });
      },
    });
    this.#emit({ type: 'acquired', token: grant.token, waitedMs: since - started, attempts: attempt });
    return new Hold(this.name, keeper, () => {
      this.#emit({ type: 'released', token: grant.token, heldMs: this.#clock.monotonic() - since });
    });
  }

  #emit(detail: LockEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({ component: 'lock', name: this.name, at: this.#clock.now(), ...detail } as LockEvent);
  }
}

/** A held slot: a class, not an object literal with getters, which V8 builds far more slowly on every hold. */
class Hold implements LockHandle {
  readonly name: string;
  readonly #keeper: LeaseKeeper;
  readonly #onReleased: () => void;

  constructor(name: string, keeper: LeaseKeeper, onReleased: () => void) {
    this.name = name;
    this.#keeper = keeper;
    this.#onReleased = onReleased;
  }

  get token(): number {
    return this.#keeper.token;
  }

  // Read through: the keeper makes the signal only when someone asks for it.
  get signal(): AbortSignal {
    return this.#keeper.signal;
  }

  get held(): boolean {
    return this.#keeper.held;
  }

  async release(): Promise<boolean> {
    const released = await this.#keeper.release();
    if (released) this.#onReleased();
    return released;
  }
}

/** A distributed mutex: one holder at a time. */
export function mutex(options: Omit<DistributedLockOptions, 'limit'>): DistributedLock {
  return new DistributedLock({ ...options, limit: 1 });
}

/** A distributed semaphore: up to `limit` holders at a time. */
export function semaphore(options: DistributedLockOptions & { readonly limit: number }): DistributedLock {
  if (options?.limit === undefined) throw new InvalidOptionsError('limit', 'a semaphore needs a limit');
  return new DistributedLock(options);
}
