import { assertDuration, assertNumber, assertOneOf, assertOptionalDuration } from './validate.js';

/**
 * A delay schedule. `delay(attempt, previous)` gives the wait before retry number `attempt` (1 = first retry);
 * `previous` is the delay used before the previous retry (0 before the first). Pure given `random`, so exact
 * sequences can be asserted in tests.
 */
export interface Backoff {
  readonly kind: string;
  delay(attempt: number, previous: number): number;
}

export type Random = () => number;

/** Retry at once. */
export function immediateBackoff(): Backoff {
  return { kind: 'immediate', delay: () => 0 };
}

/** The same delay every time. */
export function constantBackoff(delayMs: number): Backoff {
  assertDuration('delayMs', delayMs);
  return { kind: 'constant', delay: () => delayMs };
}

export interface LinearBackoffOptions {
  initialMs: number;
  /** Added per retry; defaults to `initialMs` (so 1x, 2x, 3x …). */
  incrementMs?: number;
  maxMs?: number;
}

/** initial, initial + increment, initial + 2·increment … capped at maxMs (the catalogue's incremental interval). */
export function linearBackoff(options: LinearBackoffOptions): Backoff {
  assertDuration('initialMs', options.initialMs);
  assertOptionalDuration('incrementMs', options.incrementMs);
  assertOptionalDuration('maxMs', options.maxMs);
  const { initialMs, incrementMs = initialMs, maxMs = Number.POSITIVE_INFINITY } = options;
  return { kind: 'linear', delay: (attempt) => Math.min(maxMs, initialMs + incrementMs * (attempt - 1)) };
}

export interface ExponentialBackoffOptions {
  initialMs: number;
  /** Growth per retry; default 2. */
  factor?: number;
  /** Cap on any single delay; default 30 s. */
  maxMs?: number;
  /** none: exact; full: uniform in [0, d]; equal: uniform in [d/2, d]. Default none. */
  jitter?: 'none' | 'full' | 'equal';
  random?: Random;
}

/** initial · factor^(attempt-1), capped, with optional jitter. */
export function exponentialBackoff(options: ExponentialBackoffOptions): Backoff {
  assertDuration('initialMs', options.initialMs);
  if (options.factor !== undefined) assertNumber('factor', options.factor, 1);
  assertOptionalDuration('maxMs', options.maxMs);
  if (options.jitter !== undefined) assertOneOf('jitter', options.jitter, ['none', 'full', 'equal'] as const);
  const { initialMs, factor = 2, maxMs = 30_000, jitter = 'none', random = Math.random } = options;
  return {
    kind: 'exponential',
    delay(attempt) {
      const exact = Math.min(maxMs, initialMs * factor ** (attempt - 1));
      if (jitter === 'full') return random() * exact;
      if (jitter === 'equal') return exact / 2 + (random() * exact) / 2;
      return exact;
    },
  };
}

export interface DecorrelatedJitterBackoffOptions {
  initialMs: number;
  maxMs?: number;
  random?: Random;
}

/**
 * Decorrelated jitter: each delay is uniform in [initial, previous · 3], capped. Spreads retries of many
 * clients apart while still growing, without a synchronised thundering herd.
 */
export function decorrelatedJitterBackoff(options: DecorrelatedJitterBackoffOptions): Backoff {
  assertDuration('initialMs', options.initialMs, { allowZero: false });
  assertOptionalDuration('maxMs', options.maxMs);
  const { initialMs, maxMs = 30_000, random = Math.random } = options;
  return {
    kind: 'decorrelated-jitter',
    delay(_attempt, previous) {
      const upper = Math.max(initialMs, (previous || initialMs) * 3);
      return Math.min(maxMs, initialMs + random() * (upper - initialMs));
    },
  };
}
