import {
  assertCount,
  assertInteger,
  assertObject,
  assertOptionalDuration,
  type Clock,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import { contextOf } from './context.js';
import { BulkheadRejectedError } from './errors.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from './policy.js';

/** The limits of one compartment. */
export interface BulkheadLimits {
  /** Calls allowed to run at the same time (integer >= 1). */
  maxConcurrent: number;
  /** Calls allowed to wait for a slot (integer >= 0 or Infinity); default 0: reject at once when full. */
  maxQueued?: number;
  /** A queued call waiting longer than this is rejected with reason 'queue-timeout'; default: no limit. */
  queueTimeoutMs?: number;
}

export type BulkheadPartitionLimits = Partial<BulkheadLimits>;

export interface BulkheadOptions extends BulkheadLimits {
  /**
   * Per-partition overrides of the limits above, by partition key. A function is asked each time a partition
   * is (re)created, so it may compute limits for keys not known in advance (e.g. from a tenant's plan).
   */
  partitions?:
    | Readonly<Record<string, BulkheadPartitionLimits>>
    | ((key: string) => BulkheadPartitionLimits | undefined);
  clock?: Clock;
  name?: string;
}

export interface BulkheadExecuteOptions extends ExecuteOptions {
  /** Runs the call in this partition (created on first use, dropped again once idle). */
  partition?: string;
}

export interface BulkheadStats {
  readonly active: number;
  readonly queued: number;
  readonly maxConcurrent: number;
  readonly maxQueued: number;
  /** Free execution slots. */
  readonly executionSlots: number;
  /** Free places in the queue. */
  readonly queueSlots: number;
}

interface BulkheadEventBase extends StratusEvent {
  readonly component: 'bulkhead';
  /** The partition key; undefined for calls made without one. */
  readonly partition: string | undefined;
}

export type BulkheadEvent =
  | (BulkheadEventBase & { readonly type: 'rejected'; readonly reason: BulkheadRejectedError['reason'] })
  | (BulkheadEventBase & { readonly type: 'queued'; readonly queued: number })
  | (BulkheadEventBase & {
      readonly type: 'dequeued';
      /** 'started': it got a slot; 'aborted': its caller gave up; 'timed-out': queueTimeoutMs passed. */
      readonly outcome: 'started' | 'aborted' | 'timed-out';
      readonly waitedMs: number;
    });

/** A view of one partition: a Policy of its own, so it composes like any other. */
export interface BulkheadPartition extends Policy<BulkheadEvent>, BulkheadStats {
  readonly key: string;
}

export interface BulkheadPolicy extends Policy<BulkheadEvent>, BulkheadStats {
  execute<T>(operation: Operation<T>, options?: BulkheadExecuteOptions): Promise<T>;
  /** The policy bound to one partition. Cheap; the partition's state lives in the bulkhead. */
  partition(key: string): BulkheadPartition;
  /** Counters of a partition (of the unpartitioned calls when `key` is undefined); idle if it does not exist. */
  stats(key?: string): BulkheadStats;
  /**
   * Partitions held in memory: the busy ones plus idle ones kept for reuse. Idle partitions are swept once
   * this reaches max(64, 2 × the number left after the previous sweep), so memory follows the number of
   * busy keys, not the number of keys ever seen.
   */
  readonly partitionCount: number;
}

/**
 * Bulkhead isolation: at most `maxConcurrent` calls run at once, up to `maxQueued` more wait in FIFO order,
 * the rest are rejected at once with BulkheadRejectedError. Calls may be partitioned by key (tenant,
 * downstream service): each partition has its own slots and queue, so a noisy key saturates only itself.
 */
export function bulkhead(options: BulkheadOptions): BulkheadPolicy {
  return new Bulkhead(options);
}

/** Idle partitions kept for reuse before a sweep drops them. */
const MIN_RETAINED_PARTITIONS = 64;

interface ResolvedLimits {
  maxConcurrent: number;
  maxQueued: number;
  queueTimeoutMs: number | undefined;
}

function validateLimits(prefix: string, limits: BulkheadPartitionLimits): void {
  if (limits.maxConcurrent !== undefined) assertInteger(`${prefix}maxConcurrent`, limits.maxConcurrent, 1);
  if (limits.maxQueued !== undefined) assertCount(`${prefix}maxQueued`, limits.maxQueued, 0);
  assertOptionalDuration(`${prefix}queueTimeoutMs`, limits.queueTimeoutMs, { allowZero: false });
}

class Bulkhead implements BulkheadPolicy {
  readonly name: string;
  readonly events = new EventEmitter<BulkheadEvent>();
  readonly clock: Clock;
  readonly #limits: ResolvedLimits;
  readonly #overrides: (key: string) => BulkheadPartitionLimits | undefined;
  readonly #root: Compartment;
  readonly #partitions = new Map<string, Compartment>();
  #sweepAt = MIN_RETAINED_PARTITIONS;

  constructor(options: BulkheadOptions) {
    assertObject('options', options);
    assertInteger('maxConcurrent', options.maxConcurrent, 1);
    validateLimits('', options);
    const { partitions } = options;
    if (typeof partitions === 'function') {
      this.#overrides = partitions;
    } else if (partitions !== undefined) {
      assertObject('partitions', partitions);
      for (const [key, limits] of Object.entries(partitions)) {
        assertObject(`partitions.${key}`, limits);
        validateLimits(`partitions.${key}.`, limits);
      }
      this.#overrides = (key) => (Object.hasOwn(partitions, key) ? partitions[key] : undefined);
    } else {
      this.#overrides = () => undefined;
    }
    this.name = options.name ?? 'bulkhead';
    this.clock = options.clock ?? systemClock;
    this.#limits = {
      maxConcurrent: options.maxConcurrent,
      maxQueued: options.maxQueued ?? 0,
      queueTimeoutMs: options.queueTimeoutMs,
    };
    this.#root = new Compartment(this, undefined, this.#limits);
  }

  execute<T>(operation: Operation<T>, options?: BulkheadExecuteOptions): Promise<T> {
    const key = options?.partition;
    let compartment = this.#root;
    if (key !== undefined) {
      try {
        compartment = this.#compartment(key);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return compartment.execute(operation, options);
  }

  partition(key: string): BulkheadPartition {
    if (typeof key !== 'string') throw new InvalidOptionsError('partition', 'expected a string key');
    return new PartitionView(this, key);
  }

  stats(key?: string): BulkheadStats {
    if (key === undefined) return this.#root.stats();
    const compartment = this.#partitions.get(key);
    if (compartment !== undefined) return compartment.stats();
    const limits = this.#limitsFor(key);
    return idleStats(limits.maxConcurrent, limits.maxQueued);
  }

  get partitionCount(): number {
    return this.#partitions.size;
  }

  get active(): number {
    return this.#root.active;
  }
  get queued(): number {
    return this.#root.queued;
  }
  get maxConcurrent(): number {
    return this.#root.maxConcurrent;
  }
  get maxQueued(): number {
    return this.#root.maxQueued;
  }
  get executionSlots(): number {
    return this.#root.maxConcurrent - this.#root.active;
  }
  get queueSlots(): number {
    return this.#root.maxQueued - this.#root.queued;
  }

  #compartment(key: string): Compartment {
    let compartment = this.#partitions.get(key);
    if (compartment === undefined) {
      if (this.#partitions.size >= this.#sweepAt) this.#sweepIdle();
      compartment = new Compartment(this, key, this.#limitsFor(key));
      this.#partitions.set(key, compartment);
    }
    return compartment;
  }

  /**
   * Idle partitions stay in the map until it grows past #sweepAt, because dropping a partition the moment
   * it idles and recreating it on the next call would cost more than the call itself. Each sweep is O(map)
   * and the next one waits for as many new partitions as survived, so the cost per call stays O(1).
   */
  #sweepIdle(): void {
    for (const [key, compartment] of this.#partitions) {
      if (compartment.active === 0 && compartment.queued === 0) this.#partitions.delete(key);
    }
    this.#sweepAt = Math.max(MIN_RETAINED_PARTITIONS, 2 * this.#partitions.size);
  }

  #limitsFor(key: string): ResolvedLimits {
    const override = this.#overrides(key);
    if (override === undefined) return this.#limits;
    validateLimits(`partitions.${key}.`, override);
    return { ...this.#limits, ...definedOnly(override) };
  }
}

function definedOnly(limits: BulkheadPartitionLimits): BulkheadPartitionLimits {
  const out: BulkheadPartitionLimits = {};
  if (limits.maxConcurrent !== undefined) out.maxConcurrent = limits.maxConcurrent;
  if (limits.maxQueued !== undefined) out.maxQueued = limits.maxQueued;
  if (limits.queueTimeoutMs !== undefined) out.queueTimeoutMs = limits.queueTimeoutMs;
  return out;
}

function idleStats(maxConcurrent: number, maxQueued: number): BulkheadStats {
  return {
    active: 0,
    queued: 0,
    maxConcurrent,
    maxQueued,
    executionSlots: maxConcurrent,
    queueSlots: maxQueued,
  };
}

/** A call waiting for a slot: a node of its compartment's doubly linked queue, so leaving it is O(1). */
class Waiter {
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  resolve!: (value: unknown) => void;
  reject!: (error: unknown) => void;
  timer: TimerHandle | undefined = undefined;

  constructor(
    readonly compartment: Compartment,
    readonly operation: Operation<unknown>,
    /** What the operation gets once started: the caller's options made a context, or an outer policy's. */
    readonly context: ExecuteContext,
    readonly signal: AbortSignal | undefined,
    readonly enqueuedAt: number,
  ) {}

  /** The caller's signal fired (this object is the abort listener, which saves a closure per call). */
  handleEvent(): void {
    this.compartment.leave(this, 'aborted');
  }
}

/** The slots and the queue of one partition (or of the unpartitioned calls). */
class Compartment {
  active = 0;
  queued = 0;
  #head: Waiter | undefined = undefined;
  #tail: Waiter | undefined = undefined;
  #draining = false;
  readonly maxConcurrent: number;
  readonly maxQueued: number;
  readonly queueTimeoutMs: number | undefined;
  // Settlement handlers made once per compartment, not per call.
  readonly #onFulfilled: (value: unknown) => unknown;
  readonly #onRejected: (error: unknown) => never;

  constructor(
    readonly owner: Bulkhead,
    readonly key: string | undefined,
    limits: ResolvedLimits,
  ) {
    this.maxConcurrent = limits.maxConcurrent;
    this.maxQueued = limits.maxQueued;
    this.queueTimeoutMs = limits.queueTimeoutMs;
    this.#onFulfilled = (value) => {
      this.#release();
      return value;
    };
    this.#onRejected = (error) => {
      this.#release();
      throw error;
    };
  }

  /** `source` is the caller's options or an outer policy's context, whose lazy signal is only read to queue. */
  execute<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    if (isCancelled(source)) return Promise.reject(new OperationCancelledError(cancelReasonOf(source)));
    if (this.active < this.maxConcurrent && this.#head === undefined) {
      return this.#run(operation, contextOf(source));
    }
    if (this.queued < this.maxQueued) return this.#enqueue(operation, source);
    this.#emitRejected('full');
    return Promise.reject(new BulkheadRejectedError('full', this.maxConcurrent, this.maxQueued, this.key));
  }

  stats(): BulkheadStats {
    return {
      active: this.active,
      queued: this.queued,
      maxConcurrent: this.maxConcurrent,
      maxQueued: this.maxQueued,
      executionSlots: this.maxConcurrent - this.active,
      queueSlots: this.maxQueued - this.queued,
    };
  }

  /** Takes a waiter out of the queue before it got a slot, and settles it. */
  leave(waiter: Waiter, outcome: 'aborted' | 'timed-out'): void {
    this.#unlink(waiter);
    this.#emitDequeued(waiter, outcome);
    if (outcome === 'aborted') {
      waiter.reject(new OperationCancelledError(waiter.signal?.reason));
    } else {
      this.#emitRejected('queue-timeout');
      waiter.reject(new BulkheadRejectedError('queue-timeout', this.maxConcurrent, this.maxQueued, this.key));
    }
  }

  #run<T>(operation: Operation<T>, context: ExecuteContext): Promise<T> {
    this.active++;
    return this.#runInSlot(operation, context);
  }

  /** Runs `operation` in a slot already counted in `active`. */
  #runInSlot<T>(operation: Operation<T>, context: ExecuteContext): Promise<T> {
    let result: T | PromiseLike<T>;
    try {
      result = operation(context);
    } catch (error) {
      this.#release();
      return Promise.reject(error);
    }
    return Promise.resolve(result).then(this.#onFulfilled, this.#onRejected) as Promise<T>;
  }

  #enqueue<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    const signal = source?.signal;
    const waiter = new Waiter(this, operation, contextOf(source), signal, this.owner.clock.monotonic());
    const promise = new Promise<T>((resolve, reject) => {
      waiter.resolve = resolve as (value: unknown) => void;
      waiter.reject = reject;
    });
    if (this.#tail === undefined) this.#head = waiter;
    else {
      this.#tail.next = waiter;
      waiter.prev = this.#tail;
    }
    this.#tail = waiter;
    this.queued++;
    signal?.addEventListener('abort', waiter, { once: true });
    if (this.queueTimeoutMs !== undefined) {
      waiter.timer = this.owner.clock.setTimeout(() => this.leave(waiter, 'timed-out'), this.queueTimeoutMs);
    }
    const { events } = this.owner;
    if (events.active) {
      events.emit({ ...this.#eventBase(), type: 'queued', queued: this.queued });
    }
    return promise;
  }

  #release(): void {
    this.active--;
    if (this.#head !== undefined) this.#drain();
  }

  /**
   * Hands free slots to the queue head, in FIFO order. A trampoline: an operation that throws synchronously
   * releases its slot inside this loop, so the loop (not a recursive call) starts the next waiter.
   */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#head !== undefined && this.active < this.maxConcurrent) {
        const waiter = this.#head;
        this.#unlink(waiter);
        // Take the slot before telling listeners: one calling back into the bulkhead must not get it too.
        this.active++;
        this.#emitDequeued(waiter, 'started');
        waiter.resolve(this.#runInSlot(waiter.operation, waiter.context));
      }
    } finally {
      this.#draining = false;
    }
  }

  #unlink(waiter: Waiter): void {
    if (waiter.prev === undefined) this.#head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === undefined) this.#tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.queued--;
    waiter.signal?.removeEventListener('abort', waiter);
    if (waiter.timer !== undefined) this.owner.clock.clearTimeout(waiter.timer);
  }

  #eventBase() {
    return {
      component: 'bulkhead',
      name: this.owner.name,
      at: this.owner.clock.now(),
      partition: this.key,
    } as const;
  }

  #emitRejected(reason: BulkheadRejectedError['reason']): void {
    const { events } = this.owner;
    if (events.active) events.emit({ ...this.#eventBase(), type: 'rejected', reason });
  }

  #emitDequeued(waiter: Waiter, outcome: 'started' | 'aborted' | 'timed-out'): void {
    const { events, clock } = this.owner;
    if (events.active) {
      events.emit({
        ...this.#eventBase(),
        type: 'dequeued',
        outcome,
        waitedMs: clock.monotonic() - waiter.enqueuedAt,
      });
    }
  }
}

class PartitionView implements BulkheadPartition {
  readonly #owner: Bulkhead;
  readonly #options: BulkheadExecuteOptions;

  constructor(
    owner: Bulkhead,
    readonly key: string,
  ) {
    this.#owner = owner;
    this.#options = { partition: key };
  }

  get name(): string {
    return this.#owner.name;
  }
  get events(): EventEmitter<BulkheadEvent> {
    return this.#owner.events;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const signal = options?.signal;
    return this.#owner.execute(
      operation,
      signal === undefined ? this.#options : { signal, partition: this.key },
    );
  }

  get active(): number {
    return this.#owner.stats(this.key).active;
  }
  get queued(): number {
    return this.#owner.stats(this.key).queued;
  }
  get maxConcurrent(): number {
    return this.#owner.stats(this.key).maxConcurrent;
  }
  get maxQueued(): number {
    return this.#owner.stats(this.key).maxQueued;
  }
  get executionSlots(): number {
    return this.#owner.stats(this.key).executionSlots;
  }
  get queueSlots(): number {
    return this.#owner.stats(this.key).queueSlots;
  }
}
