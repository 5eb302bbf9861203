// The circuit breaker's options, and their validation into the settings it runs on.
import {
  assertDuration,
  assertFunction,
  assertInteger,
  assertObject,
  type Backoff,
  type Clock,
  InvalidOptionsError,
  systemClock,
} from '@stratus/core';
import type { FailureClassifier } from '../policy.js';
import { httpStatusOf, retryAfterMs } from '../transient.js';
import type { CircuitBreakerSnapshot } from './circuit-snapshot.js';
import type { SharedCircuitOptions } from './circuit-sync.js';
import { createTripRule, type TripOption, type TripRule } from './trip-rule.js';

export interface HalfOpenOptions {
  /** Trial calls admitted at the same time while half-open (integer >= 1); the rest fail fast. Default 1. */
  maxConcurrent?: number;
  /** Trial successes in a row that close the circuit (integer >= 1). Default 1. */
  successesToClose?: number;
}

export interface RetryAfterOptions {
  /** HTTP statuses whose Retry-After opens the circuit; default [429, 503]. */
  statuses?: readonly number[];
  /** Cap on the open period a server can ask for; default 10 minutes. */
  maxMs?: number;
}

export interface CircuitBreakerOptions {
  /** When to open: a built-in rule, several (any trips), or a custom rule factory. Default: 5 failures in a row. */
  trip?: TripOption;
  /**
   * How long to stay open before admitting trial calls: fixed ms, or a Backoff whose `delay(n, previous)` is
   * used for the n-th consecutive opening (a close resets n). Default 5000.
   */
  openMs?: number | Backoff;
  halfOpen?: HalfOpenOptions;
  /** What counts as a failure. Default: every thrown error and no returned value. Cancellations never count. */
  handle?: FailureClassifier;
  /**
   * A failure carrying Retry-After (HTTP 429/503 by default) opens the circuit at once for at least that long
   * ("accelerated circuit breaking"). Default on; `false` turns it off.
   */
  retryAfter?: boolean | RetryAfterOptions;
  /** State exported by `exportState()`/`toJSON()` (e.g. by an earlier process) to start from. */
  initialState?: CircuitBreakerSnapshot;
  /** Share the circuit with other instances through a store (see SharedCircuitOptions). */
  shared?: SharedCircuitOptions;
  clock?: Clock;
  name?: string;
}

/** The options, validated and with their defaults (all but `initialState` and `shared`). */
export interface CircuitSettings {
  readonly name: string;
  readonly clock: Clock;
  readonly rule: TripRule;
  readonly openDelay: (attempt: number, previous: number) => number;
  readonly maxTrials: number;
  readonly successesToClose: number;
  readonly isFailureError: ((error: unknown) => boolean) | undefined;
  readonly isFailureResult: ((value: unknown) => boolean) | undefined;
  /** Undefined when `retryAfter` is off. */
  readonly retryAfter: RetryAfterSettings | undefined;
}

export interface RetryAfterSettings {
  readonly statuses: ReadonlySet<number>;
  readonly maxMs: number;
}

const DEFAULT_TRIP: TripOption = { kind: 'consecutive-failures', failures: 5 };
const DEFAULT_RETRY_AFTER_STATUSES: readonly number[] = [429, 503];
const DEFAULT_RETRY_AFTER_MAX_MS = 600_000;

export function resolveCircuitOptions(options: CircuitBreakerOptions): CircuitSettings {
  assertObject('options', options as unknown);
  const name = options.name ?? 'circuit-breaker';
  const clock = options.clock ?? systemClock;
  const rule = createTripRule(options.trip ?? DEFAULT_TRIP);
  const openDelay = openDelayOf(options.openMs ?? 5000);

  const halfOpen = options.halfOpen ?? {};
  assertObject('halfOpen', halfOpen as unknown);
  const maxTrials = halfOpen.maxConcurrent ?? 1;
  const successesToClose = halfOpen.successesToClose ?? 1;
  assertInteger('halfOpen.maxConcurrent', maxTrials, 1);
  assertInteger('halfOpen.successesToClose', successesToClose, 1);

  const handle = options.handle ?? {};
  assertObject('handle', handle as unknown);
  if (handle.error !== undefined) assertFunction('handle.error', handle.error as unknown);
  if (handle.result !== undefined) assertFunction('handle.result', handle.result as unknown);

  return {
    name,
    clock,
    rule,
    openDelay,
    maxTrials,
    successesToClose,
    isFailureError: handle.error,
    isFailureResult: handle.result,
    retryAfter: retryAfterSettingsOf(options.retryAfter ?? true),
  };
}

function retryAfterSettingsOf(retryAfter: boolean | RetryAfterOptions): RetryAfterSettings | undefined {
  if (retryAfter === false) return undefined;
  const settings = retryAfter === true ? {} : retryAfter;
  assertObject('retryAfter', settings as unknown);
  const statuses = settings.statuses ?? DEFAULT_RETRY_AFTER_STATUSES;
  if (!Array.isArray(statuses)) throw new InvalidOptionsError('retryAfter.statuses', 'expected an array');
  statuses.forEach((s, i) => {
    assertInteger(`retryAfter.statuses[${i}]`, s, 100, 599);
  });
  const maxMs = settings.maxMs ?? DEFAULT_RETRY_AFTER_MAX_MS;
  assertDuration('retryAfter.maxMs', maxMs);
  return { statuses: new Set(statuses), maxMs };
}

/** Ms a failure's Retry-After asks the circuit to stay open for (0: none, or not a status it honours). */
export function retryAfterOf(
  failure: unknown,
  settings: RetryAfterSettings | undefined,
  clock: Clock,
): number {
  if (settings === undefined) return 0;
  const status = httpStatusOf(failure);
  if (status === undefined || !settings.statuses.has(status)) return 0;
  const ms = retryAfterMs(failure, clock.now());
  return ms === undefined ? 0 : Math.min(ms, settings.maxMs);
}

function openDelayOf(option: number | Backoff): (attempt: number, previous: number) => number {
  if (typeof option === 'number') {
    assertDuration('openMs', option);
    return () => option;
  }
  assertObject('openMs', option as unknown);
  assertFunction('openMs.delay', option.delay as unknown);
  return (attempt, previous) => option.delay(attempt, previous);
}
