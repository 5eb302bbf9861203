import {
  assertDuration,
  assertFunction,
  assertObject,
  assertRatio,
  type Clock,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
  sleep,
  systemClock,
} from '@stratus/core';
import { contextOf, runOperation } from './context.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from './policy.js';

/** Options every chaos policy takes. */
export interface ChaosOptions {
  /** Share of calls that get the chaos, in [0, 1]. */
  injectionRate: number;
  /**
   * Whether the policy injects anything (default true). A function is read on every call, so chaos can be
   * switched on and off at run time (a feature flag, an environment check, an admin endpoint).
   */
  enabled?: boolean | (() => boolean);
  /** Source of randomness in [0, 1), for deterministic tests; default Math.random. */
  random?: () => number;
  clock?: Clock;
  name?: string;
}

export interface ChaosFaultOptions extends ChaosOptions {
  /** The error thrown instead of running the operation; a function makes a fresh one per injection. */
  fault: Error | ((context: ExecuteContext) => Error);
}

export interface ChaosLatencyOptions extends ChaosOptions {
  /** Delay added before the operation runs (waited on the clock; the caller's signal cuts it short). */
  latencyMs: number | ((context: ExecuteContext) => number);
}

export interface ChaosOutcomeOptions<R> extends ChaosOptions {
  /**
   * The result returned instead of running the operation; a function is called to make it (so to inject a
   * function value, return it from a function). Use it only around operations whose result type is R.
   */
  outcome: R | ((context: ExecuteContext) => R);
}

export type ChaosKind = 'fault' | 'latency' | 'outcome';

export interface ChaosEvent extends StratusEvent {
  readonly component: 'chaos';
  readonly type: 'injected';
  readonly kind: ChaosKind;
  /** The delay injected, for kind 'latency'. */
  readonly latencyMs?: number;
}

export interface ChaosPolicy extends Policy<ChaosEvent> {
  readonly kind: ChaosKind;
}

/** Fails a share of calls with `fault` without running them (Simmy's fault strategy). */
export function chaosFault(options: ChaosFaultOptions): ChaosPolicy {
  assertObject('options', options);
  const { fault } = options;
  if (!(fault instanceof Error) && typeof fault !== 'function') {
    throw new InvalidOptionsError('fault', 'expected an Error or a function returning one');
  }
  return new Chaos('fault', options, (_operation, context) =>
    Promise.reject(typeof fault === 'function' ? fault(context) : fault),
  );
}

/** Delays a share of calls by `latencyMs` before running them (Simmy's latency strategy). */
export function chaosLatency(options: ChaosLatencyOptions): ChaosPolicy {
  assertObject('options', options);
  const { latencyMs } = options;
  if (typeof latencyMs !== 'function') assertDuration('latencyMs', latencyMs);
  return new Chaos('latency', options, (operation, context, policy) => {
    const ms = typeof latencyMs === 'function' ? latencyMs(context) : latencyMs;
    assertDuration('latencyMs', ms);
    policy.emitInjected(ms);
    return sleep(policy.clock, ms, context.signal).then(() => runOperation(operation, context));
  });
}

/** Answers a share of calls with `outcome` without running them (Simmy's outcome strategy). */
export function chaosOutcome<R>(options: ChaosOutcomeOptions<R>): ChaosPolicy {
  assertObject('options', options);
  if (!Object.hasOwn(options, 'outcome')) throw new InvalidOptionsError('outcome', 'is required');
  const { outcome } = options;
  return new Chaos('outcome', options, (_operation, context) =>
    Promise.resolve(typeof outcome === 'function' ? (outcome as (c: ExecuteContext) => R)(context) : outcome),
  );
}

/** Returns the chaos for one call; latency emits its own event because it knows the delay. */
type Inject = (operation: Operation<unknown>, context: ExecuteContext, policy: Chaos) => Promise<unknown>;

class Chaos implements ChaosPolicy {
  readonly name: string;
  readonly events = new EventEmitter<ChaosEvent>();
  readonly clock: Clock;
  readonly #enabled: boolean | (() => boolean);
  readonly #rate: number;
  readonly #random: () => number;
  readonly #inject: Inject;

  constructor(
    readonly kind: ChaosKind,
    options: ChaosOptions,
    inject: Inject,
  ) {
    assertRatio('injectionRate', options.injectionRate);
    const { enabled = true, random = Math.random } = options;
    if (typeof enabled !== 'boolean') assertFunction('enabled', enabled);
    assertFunction('random', random);
    this.#enabled = enabled;
    this.#rate = options.injectionRate;
    this.#random = random;
    this.#inject = inject;
    this.name = options.name ?? `chaos-${kind}`;
    this.clock = options.clock ?? systemClock;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    // An outer policy's context is used as it is, so its lazy signal is only made if latency is injected.
    const context = contextOf(options);
    const enabled = this.#enabled;
    // Disabled or not drawn: one branch, then the operation as if the policy were not there.
    if (
      this.#rate === 0 ||
      enabled === false ||
      (enabled !== true && !enabled()) ||
      this.#random() >= this.#rate
    ) {
      return runOperation(operation, context);
    }
    if (this.kind !== 'latency') this.emitInjected(undefined);
    try {
      return this.#inject(operation as Operation<unknown>, context, this) as Promise<T>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  emitInjected(latencyMs: number | undefined): void {
    if (!this.events.active) return;
    const event = {
      component: 'chaos',
      type: 'injected',
      name: this.name,
      at: this.clock.now(),
      kind: this.kind,
    } as const;
    this.events.emit(latencyMs === undefined ? event : { ...event, latencyMs });
  }
}
