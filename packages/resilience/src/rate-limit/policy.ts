import {
  assertCount,
  assertDuration,
  assertObject,
  type Clock,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  remainingMs,
  type StratusEvent,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import { contextOf, runOperation } from '../context.js';
import { RateLimitedError } from '../errors.js';
import { EventRelay } from '../event-relay.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from '../policy.js';
import type { LocalRateLimiter, RateLimiter, RateLimiterEvent, RateLimitResult } from './types.js';

/** Per-call options: which key to charge and how much (when the policy's options do not decide). */
export interface RateLimitExecuteOptions extends ExecuteOptions {
  key?: string;
  cost?: number;
}

export interface RateLimitPolicyOptions {
  limiter: RateLimiter;
  /**
   * The key a call is charged to: a constant, or a function of the call's options (which may be the
   * context an outer policy hands on). Default: the call's `key` option, else 'default'.
   */
  key?: string | ((options: RateLimitExecuteOptions) => string);
  /** Permits a call takes: a constant or a function of its options. Default: the call's `cost`, else 1. */
  cost?: number | ((options: RateLimitExecuteOptions) => number);
  /**
   * Queueing mode: a call that cannot have its permits now waits up to this long (and never past its
   * caller's deadline) in a FIFO queue of its key, instead of failing at once. Default 0: refuse at once.
   */
  maxWaitMs?: number;
  /** Calls allowed to wait at once, over all keys (integer >= 0 or Infinity); default Infinity. */
  maxQueued?: number;
  /** Time of the waits; default systemClock. */
  clock?: Clock;
  name?: string;
}

interface RateLimitPolicyEventBase extends StratusEvent {
  readonly component: 'rate-limit';
  readonly key: string;
}

/** Events of the policy itself; `policy.events` also carries its limiter's events (limited, soft limit). */
export type RateLimitPolicyEvent =
  | (RateLimitPolicyEventBase & {
      readonly type: 'rejected';
      /** 'limited': no permits and no waiting; 'queue-full': maxQueued reached; 'wait-timeout': none in time. */
      readonly reason: 'limited' | 'queue-full' | 'wait-timeout';
      readonly retryAfterMs: number;
      readonly waitedMs: number;
    })
  | (RateLimitPolicyEventBase & { readonly type: 'queued'; readonly queued: number });

export interface RateLimitPolicy extends Policy<RateLimitPolicyEvent | RateLimiterEvent> {
  readonly limiter: RateLimiter;
  /** Calls waiting for permits now. */
  readonly queued: number;
  /** Runs `operation` once it has its permits; rejects with RateLimitedError when it cannot have them. */
  execute<T>(operation: Operation<T>, options?: RateLimitExecuteOptions): Promise<T>;
  /** The policy bound to one key (a tenant's view), to compose in a pipeline. */
  forKey(key: string): Policy<RateLimitPolicyEvent | RateLimiterEvent>;
}

/**
 * Throttling as a policy: each call takes permits from a keyed limiter before it runs. Refused calls fail
 * with RateLimitedError (its `retryAfterMs` says when to come back), or, in queueing mode, wait their turn
 * per key in FIFO order for up to `maxWaitMs`, abortably. Permits of a concurrency limiter are held while
 * the operation runs and released when it settles.
 */
export function rateLimit(options: RateLimitPolicyOptions): RateLimitPolicy {
  return new RateLimit(options);
}

const noOptions: RateLimitExecuteOptions = Object.freeze({});

/**
 * How often a waiter for a lease of a shared store asks again: other processes release leases without
 * telling us, so waiting for the oldest lease to expire could mean waiting far longer than needed.
 */
const SHARED_LEASE_POLL_MS = 100;

function keyFunction(key: RateLimitPolicyOptions['key']): (options: RateLimitExecuteOptions) => string {
  if (key === undefined) return (options) => options.key ?? 'default';
  if (typeof key === 'string') return () => key;
  if (typeof key === 'function') return key;
  throw new InvalidOptionsError('key', 'expected a string or a function of the call options');
}

function costFunction(cost: RateLimitPolicyOptions['cost']): (options: RateLimitExecuteOptions) => number {
  if (cost === undefined) return (options) => options.cost ?? 1;
  if (typeof cost === 'number') return () => cost;
  if (typeof cost === 'function') return cost;
  throw new InvalidOptionsError('cost', 'expected a number or a function of the call options');
}

class RateLimit implements RateLimitPolicy {
  readonly name: string;
  readonly limiter: RateLimiter;
  readonly clock: Clock;
  readonly events: EventRelay<RateLimitPolicyEvent | RateLimiterEvent>;
  readonly #own = new EventEmitter<RateLimitPolicyEvent>();
  readonly maxWaitMs: number;
  readonly maxQueued: number;
  /** Set when the limiter answers synchronously: the happy path then allocates nothing but the result. */
  readonly local: LocalRateLimiter | undefined;
  readonly #keyOf: (options: RateLimitExecuteOptions) => string;
  readonly #costOf: (options: RateLimitExecuteOptions) => number;
  readonly #queues = new Map<string, KeyQueue>();
  queued = 0;

  constructor(options: RateLimitPolicyOptions) {
    assertObject('options', options as unknown);
    const { limiter } = options;
    if (typeof (limiter as { acquire?: unknown })?.acquire !== 'function') {
      throw new InvalidOptionsError('limiter', 'expected a rate limiter (fixedWindow(), tokenBucket(), ...)');
    }
    this.maxWaitMs = options.maxWaitMs ?? 0;
    assertDuration('maxWaitMs', this.maxWaitMs);
    this.maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY;
    assertCount('maxQueued', this.maxQueued, 0);
    this.limiter = limiter;
    this.local =
      typeof (limiter as Partial<LocalRateLimiter>).tryAcquire === 'function'
        ? (limiter as LocalRateLimiter)
        : undefined;
    this.#keyOf = keyFunction(options.key);
    this.#costOf = costFunction(options.cost);
    this.clock = options.clock ?? systemClock;
    this.name = options.name ?? 'rate-limit';
    this.events = new EventRelay<RateLimitPolicyEvent | RateLimiterEvent>([this.#own, limiter.events]);
  }

  execute<T>(operation: Operation<T>, options?: RateLimitExecuteOptions): Promise<T> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    let key: string;
    try {
      key = this.#keyOf(options ?? noOptions);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.executeFor(key, operation, options);
  }

  forKey(key: string): Policy<RateLimitPolicyEvent | RateLimiterEvent> {
    if (typeof key !== 'string') throw new InvalidOptionsError('key', 'expected a string');
    return new KeyView(this, key);
  }

  executeFor<T>(
    key: string,
    operation: Operation<T>,
    options: RateLimitExecuteOptions | undefined,
  ): Promise<T> {
    let cost: number;
    let result: RateLimitResult | undefined;
    try {
      cost = this.#costOf(options ?? noOptions);
      // The fast path: a local limiter and nobody queued before us for this key.
      if (this.local !== undefined && !this.#queues.has(key)) result = this.local.tryAcquire(key, cost);
    } catch (error) {
      return Promise.reject(error);
    }
    if (result !== undefined) {
      if (result.allowed) return this.#run(key, operation, contextOf(options), result);
      if (this.maxWaitMs === 0) return Promise.reject(this.#reject(key, 'limited', result.retryAfterMs, 0));
    }
    return this.#admit(key, cost, options, result).then((granted) =>
      this.#run(key, operation, contextOf(options), granted),
    );
  }

  /** Permits for a call that did not get them on the fast path: ask the store, then queue if allowed to. */
  async #admit(
    key: string,
    cost: number,
    options: RateLimitExecuteOptions | undefined,
    refused: RateLimitResult | undefined,
  ): Promise<RateLimitResult> {
    let queue = this.#queues.get(key);
    let result = refused;
    if (queue === undefined && result === undefined) {
      result = await this.limiter.acquire(key, cost);
      if (result.allowed) return result;
      // An abort while the store answered would not fire again for the waiter's listener.
      if (isCancelled(options)) throw new OperationCancelledError(cancelReasonOf(options));
      queue = this.#queues.get(key); // others may have queued while we asked
    }
    if (this.maxWaitMs === 0) throw this.#reject(key, 'limited', result?.retryAfterMs ?? 0, 0);
    const retryAfterMs = result?.retryAfterMs ?? queue?.retryAfterMs ?? 0;
    const budget = Math.min(this.maxWaitMs, remainingMs(options));
    if (this.queued >= this.maxQueued) throw this.#reject(key, 'queue-full', retryAfterMs, 0);
    // A time-based refusal says exactly when permits return: past the budget, waiting is pointless. Leases
    // come back when released, at no predictable time, so for them it is worth waiting anyway, unless the
    // call asks for more than the limit: that never fits (retry-after Infinity), and would block the queue.
    if ((queue === undefined && !this.limiter.leased && retryAfterMs > budget) || cost > this.limiter.limit) {
      throw this.#reject(
        key,
        'limited',
        cost > this.limiter.limit ? Number.POSITIVE_INFINITY : retryAfterMs,
        0,
      );
    }
    if (queue === undefined) {
      queue = new KeyQueue(this, key);
      this.#queues.set(key, queue);
    }
    const waiter = queue.enqueue(cost, budget, options?.signal);
    if (result !== undefined && queue.head === waiter) queue.wait(result);
    return waiter.promise;
  }

  #run<T>(
    key: string,
    operation: Operation<T>,
    context: ExecuteContext,
    result: RateLimitResult,
  ): Promise<T> {
    const lease = result.lease;
    if (lease === undefined) return runOperation(operation, context);
    const release = () => {
      // A failed release is not the caller's failure: the lease expires on its own.
      lease.release().then(
        () => this.#queues.get(key)?.wake(),
        () => this.#queues.get(key)?.wake(),
      );
    };
    return runOperation(operation, context).finally(release);
  }

  /** The error for a call that does not get its permits (and its event, when someone listens). */
  #reject(
    key: string,
    reason: 'limited' | 'queue-full' | 'wait-timeout',
    retryAfterMs: number,
    waitedMs: number,
  ) {
    if (this.#own.active) {
      this.#own.emit({
        component: 'rate-limit',
        name: this.name,
        type: 'rejected',
        at: this.clock.now(),
        key,
        reason,
        retryAfterMs,
        waitedMs,
      });
    }
    return new RateLimitedError(key, retryAfterMs, this.limiter.limit);
  }

  rejectWaiter(waiter: Waiter, reason: 'wait-timeout', retryAfterMs: number): void {
    waiter.reject(
      this.#reject(waiter.queue.key, reason, retryAfterMs, this.clock.monotonic() - waiter.since),
    );
  }

  dropQueue(queue: KeyQueue): void {
    if (this.#queues.get(queue.key) === queue) this.#queues.delete(queue.key);
  }

  emitQueued(key: string): void {
    if (this.#own.active) {
      this.#own.emit({
        component: 'rate-limit',
        name: this.name,
        type: 'queued',
        at: this.clock.now(),
        key,
        queued: this.queued,
      });
    }
  }
}

/** A call waiting for permits: a node of its key's doubly linked FIFO, so leaving it is O(1). */
class Waiter {
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  timer: TimerHandle | undefined = undefined;
  settled = false;
  readonly promise: Promise<RateLimitResult>;
  resolve!: (result: RateLimitResult) => void;
  reject!: (error: unknown) => void;

  constructor(
    readonly queue: KeyQueue,
    readonly cost: number,
    /** Monotonic time the call started waiting, and by which it must have its permits. */
    readonly since: number,
    readonly deadline: number,
    readonly signal: AbortSignal | undefined,
  ) {
    this.promise = new Promise<RateLimitResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** The caller's signal fired (this object is the abort listener, which saves a closure per call). */
  handleEvent(): void {
    this.queue.leave(this, new OperationCancelledError(this.signal?.reason));
  }
}

/**
 * The calls waiting for one key. Only the head asks the limiter: when refused it sleeps until the permits
 * are due (or, for leases, until one is released here or the oldest expires), so waiters are served in
 * order and the store sees one request per wake-up, not one per waiter.
 */
class KeyQueue {
  head: Waiter | undefined = undefined;
  #tail: Waiter | undefined = undefined;
  #timer: TimerHandle | undefined = undefined;
  #pumping = false;
  /** The head's last refusal: when permits are due. */
  retryAfterMs = 0;

  constructor(
    readonly owner: RateLimit,
    readonly key: string,
  ) {}

  enqueue(cost: number, budget: number, signal: AbortSignal | undefined): Waiter {
    const { clock } = this.owner;
    const now = clock.monotonic();
    const waiter = new Waiter(this, cost, now, now + budget, signal);
    if (this.#tail === undefined) this.head = waiter;
    else {
      this.#tail.next = waiter;
      waiter.prev = this.#tail;
    }
    this.#tail = waiter;
    this.owner.queued++;
    signal?.addEventListener('abort', waiter, { once: true });
    waiter.timer = clock.setTimeout(() => {
      waiter.timer = undefined;
      if (!waiter.settled)
        this.#settle(waiter, () => this.owner.rejectWaiter(waiter, 'wait-timeout', this.retryAfterMs));
    }, budget);
    this.owner.emitQueued(this.key);
    return waiter;
  }

  /** The head was just refused with `result`: sleep until it may succeed. */
  wait(result: RateLimitResult): void {
    this.retryAfterMs = result.retryAfterMs;
    const { limiter } = this.owner;
    const delay =
      limiter.leased && limiter.store !== 'memory'
        ? Math.min(result.retryAfterMs, SHARED_LEASE_POLL_MS)
        : result.retryAfterMs;
    if (this.#timer !== undefined) this.owner.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    // Leases that never expire come back only through a release (wake); the waiters' own timers bound it.
    if (!Number.isFinite(delay)) return;
    this.#timer = this.owner.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#pump();
    }, delay);
  }

  /** Permits may have come back (a lease was released, or the head left): ask again now. */
  wake(): void {
    if (this.#timer !== undefined) this.owner.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    void this.#pump();
  }

  leave(waiter: Waiter, error: unknown): void {
    if (waiter.settled) return;
    this.#settle(waiter, () => waiter.reject(error));
  }

  /** Takes `waiter` out of the queue and settles it; a new head gets its chance at once. */
  #settle(waiter: Waiter, settle: () => void): void {
    const wasHead = waiter === this.head;
    this.#unlink(waiter);
    settle();
    if (wasHead) this.wake();
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    const { owner } = this;
    try {
      while (this.head !== undefined) {
        const waiter = this.head;
        let result: RateLimitResult;
        try {
          result =
            owner.local !== undefined
              ? owner.local.tryAcquire(this.key, waiter.cost)
              : await owner.limiter.acquire(this.key, waiter.cost);
        } catch (error) {
          // A waiter that left while the store answered is unlinked already; unlinking again would drop the queue.
          if (!waiter.settled) {
            this.#unlink(waiter);
            waiter.reject(error);
          }
          continue;
        }
        if (waiter.settled) {
          // It left (aborted, timed out) while the store answered: give back what can be given back.
          void result.lease?.release();
          continue;
        }
        if (result.allowed) {
          this.#unlink(waiter);
          waiter.resolve(result);
          continue;
        }
        const left = waiter.deadline - owner.clock.monotonic();
        if (!owner.limiter.leased && result.retryAfterMs > left) {
          this.#unlink(waiter);
          owner.rejectWaiter(waiter, 'wait-timeout', result.retryAfterMs);
          continue;
        }
        this.wait(result);
        return;
      }
      owner.dropQueue(this);
    } finally {
      this.#pumping = false;
    }
  }

  #unlink(waiter: Waiter): void {
    waiter.settled = true;
    if (waiter.prev === undefined) this.head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === undefined) this.#tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.owner.queued--;
    waiter.signal?.removeEventListener('abort', waiter);
    if (waiter.timer !== undefined) this.owner.clock.clearTimeout(waiter.timer);
    if (this.head === undefined && !this.#pumping) {
      if (this.#timer !== undefined) this.owner.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
      this.owner.dropQueue(this);
    }
  }
}

class KeyView implements Policy<RateLimitPolicyEvent | RateLimiterEvent> {
  constructor(
    readonly owner: RateLimit,
    readonly key: string,
  ) {}

  get name(): string {
    return this.owner.name;
  }

  get events(): EventEmitter<RateLimitPolicyEvent | RateLimiterEvent> {
    return this.owner.events;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    return this.owner.executeFor(this.key, operation, options);
  }
}
