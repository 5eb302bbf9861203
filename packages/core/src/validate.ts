import { InvalidOptionsError } from './errors.js';

/** Option validators: each throws InvalidOptionsError naming the option and what was wrong. */

export function assertDuration(
  option: string,
  value: unknown,
  { allowZero = true } = {},
): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new InvalidOptionsError(
      option,
      `expected a finite ${allowZero ? 'non-negative' : 'positive'} duration in milliseconds, got ${describeValue(value)}`,
    );
  }
}

export function assertOptionalDuration(option: string, value: unknown, opts?: { allowZero?: boolean }): void {
  if (value !== undefined) assertDuration(option, value, opts);
}

export function assertInteger(
  option: string,
  value: unknown,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`;
    throw new InvalidOptionsError(option, `expected an integer ${range}, got ${describeValue(value)}`);
  }
}

/** Like assertInteger but also accepts Infinity (unbounded counts such as queue sizes). */
export function assertCount(option: string, value: unknown, min: number): asserts value is number {
  if (value === Number.POSITIVE_INFINITY) return;
  assertInteger(option, value, min);
}

export function assertRatio(
  option: string,
  value: unknown,
  { exclusiveMin = false } = {},
): asserts value is number {
  if (typeof value !== 'number' || !(exclusiveMin ? value > 0 : value >= 0) || value > 1) {
    throw new InvalidOptionsError(
      option,
      `expected a ratio in ${exclusiveMin ? '(0' : '[0'}, 1], got ${describeValue(value)}`,
    );
  }
}

export function assertNumber(option: string, value: unknown, min: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new InvalidOptionsError(option, `expected a finite number >= ${min}, got ${describeValue(value)}`);
  }
}

export function assertFunction(
  option: string,
  value: unknown,
): asserts value is (...args: never[]) => unknown {
  if (typeof value !== 'function')
    throw new InvalidOptionsError(option, `expected a function, got ${describeValue(value)}`);
}

export function assertOneOf<T extends string>(
  option: string,
  value: unknown,
  allowed: readonly T[],
): asserts value is T {
  if (!allowed.includes(value as T)) {
    throw new InvalidOptionsError(
      option,
      `expected one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${describeValue(value)}`,
    );
  }
}

export function assertObject(option: string, value: unknown): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidOptionsError(option, `expected an object, got ${describeValue(value)}`);
  }
}

/** A value as an error message shows what was given: strings quoted, numbers as is, objects by their kind. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null)
    return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
