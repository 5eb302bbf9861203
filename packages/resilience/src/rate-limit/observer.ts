import {
  assertFunction,
  assertObject,
  assertRatio,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  type TimerHandle,
} from '@stratus/core';
import type {
  RateLimiterEvent,
  RateLimitResult,
  SoftLimitClearedEvent,
  SoftLimitEvent,
  SoftLimitOptions,
} from './types.js';

/**
 * What every limiter does with each result, whatever its store: emit `limited` for a refusal (only when
 * someone listens), and track the soft limit when one is configured.
 */
export class LimiterObserver {
  readonly events = new EventEmitter<RateLimiterEvent>();
  readonly #soft: SoftLimitTracker | undefined;

  constructor(
    readonly name: string,
    readonly clock: Clock,
    softLimit: SoftLimitOptions | undefined,
  ) {
    this.#soft = softLimit === undefined ? undefined : new SoftLimitTracker(this, softLimit);
  }

  observe(key: string, cost: number, result: RateLimitResult): void {
    if (!result.allowed && this.events.active) {
      this.events.emit({
        component: 'rate-limiter',
        name: this.name,
        type: 'limited',
        at: this.clock.now(),
        key,
        cost,
        limit: result.limit,
        retryAfterMs: result.retryAfterMs,
      });
    }
    if (this.#soft !== undefined) this.#soft.observe(key, result);
  }

  /** The key was reset: its usage is zero. */
  forget(key: string): void {
    this.#soft?.clear(key, 0);
  }
}

export function validateSoftLimit(softLimit: unknown): asserts softLimit is SoftLimitOptions | undefined {
  if (softLimit === undefined) return;
  assertObject('softLimit', softLimit);
  assertRatio('softLimit.threshold', softLimit.threshold, { exclusiveMin: true });
  if (softLimit.clearBelow !== undefined) {
    assertRatio('softLimit.clearBelow', softLimit.clearBelow);
    if (softLimit.clearBelow > softLimit.threshold) {
      throw new InvalidOptionsError('softLimit.clearBelow', 'must not be above softLimit.threshold');
    }
  }
  if (softLimit.onChange !== undefined) assertFunction('softLimit.onChange', softLimit.onChange);
}

interface EngagedKey {
  /** Monotonic time by which the key's usage is back to zero unless it makes more requests. */
  idleAt: number;
  timer: TimerHandle | undefined;
}

/**
 * Per-key soft-limit state as this process observes it. Only keys above the threshold are tracked. A key
 * that goes quiet while engaged is cleared by a timer at the moment its quota is full again, because no
 * further request would ever tell us its usage fell.
 */
class SoftLimitTracker {
  readonly #owner: LimiterObserver;
  readonly #threshold: number;
  readonly #clearBelow: number;
  readonly #onChange: SoftLimitOptions['onChange'];
  readonly #engaged = new Map<string, EngagedKey>();

  constructor(owner: LimiterObserver, options: SoftLimitOptions) {
    this.#owner = owner;
    this.#threshold = options.threshold;
    this.#clearBelow = options.clearBelow ?? options.threshold;
    this.#onChange = options.onChange;
  }

  observe(key: string, result: RateLimitResult): void {
    const usage = (result.limit - result.remaining) / result.limit;
    const engaged = this.#engaged.get(key);
    if (engaged === undefined) {
      if (usage >= this.#threshold) this.#engage(key, usage, result.resetMs);
    } else if (usage < this.#clearBelow) {
      this.clear(key, usage);
    } else {
      engaged.idleAt = this.#owner.clock.monotonic() + result.resetMs;
    }
  }

  clear(key: string, usage: number): void {
    const engaged = this.#engaged.get(key);
    if (engaged === undefined) return;
    this.#engaged.delete(key);
    if (engaged.timer !== undefined) this.#owner.clock.clearTimeout(engaged.timer);
    const event: SoftLimitClearedEvent = {
      component: 'rate-limiter',
      name: this.#owner.name,
      type: 'soft-limit-cleared',
      at: this.#owner.clock.now(),
      key,
      usage,
    };
    this.#notify(event);
  }

  #engage(key: string, usage: number, resetMs: number): void {
    const { clock } = this.#owner;
    const engaged: EngagedKey = { idleAt: clock.monotonic() + resetMs, timer: undefined };
    this.#engaged.set(key, engaged);
    this.#arm(key, engaged, resetMs);
    const event: SoftLimitEvent = {
      component: 'rate-limiter',
      name: this.#owner.name,
      type: 'soft-limit',
      at: clock.now(),
      key,
      usage,
      threshold: this.#threshold,
    };
    this.#notify(event);
  }

  /** Checks again when the key would be idle; requests in between only move `idleAt`, never the timer. */
  #arm(key: string, engaged: EngagedKey, delayMs: number): void {
    if (!Number.isFinite(delayMs)) return;
    engaged.timer = this.#owner.clock.setTimeout(
      () => {
        engaged.timer = undefined;
        const left = engaged.idleAt - this.#owner.clock.monotonic();
        if (left <= 0) this.clear(key, 0);
        else this.#arm(key, engaged, left);
      },
      delayMs,
      { unref: true },
    );
  }

  #notify(event: SoftLimitEvent | SoftLimitClearedEvent): void {
    if (this.#onChange !== undefined) {
      try {
        this.#onChange(event);
      } catch (error) {
        // A broken hook must not fail the request that crossed the threshold.
        process.emitWarning(`Stratus soft-limit hook threw: ${String(error)}`, 'StratusListenerWarning');
      }
    }
    const { events } = this.#owner;
    if (events.active) events.emit(event);
  }
}
