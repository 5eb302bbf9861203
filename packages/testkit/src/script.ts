import { assertFunction, assertNumber, InvalidOptionsError } from '@stratus/core';

/**
 * What a fault-injecting fake does, call by call. A script is one of:
 * - a single step: every call does that;
 * - `{ sequence: [a, b, c], then }`: calls 1..3 do a, b, c, later calls follow `then` (a script; the fake's
 *   default when omitted);
 * - `{ repeat: [a, b] }`: a, b, a, b, ...;
 * - `{ mix: [[weight, step], ...], random }`: each call picks a step at random, in proportion to the weights
 *   (`random` defaults to Math.random; inject a seeded one for reproducible tests);
 * - a function of the call (its 0-based index and whatever the fake passes): anything else.
 */
export type Script<S, C = unknown> =
  | S
  | { readonly sequence: readonly S[]; readonly then?: Script<S, C> }
  | { readonly repeat: readonly S[] }
  | { readonly mix: readonly (readonly [weight: number, step: S])[]; readonly random?: () => number }
  | ((call: C & { readonly index: number }) => S);

/** Turns a script into the function that picks the step for each call. */
export type StepPicker<S, C> = (call: C & { readonly index: number }) => S;

/**
 * Compiles `script`. `isStep` tells steps from script objects; `fallback` is used after a sequence without
 * `then`. Counting is relative to when the script was set, so replacing a script restarts it.
 */
export function compileScript<S, C>(
  script: Script<S, C>,
  isStep: (value: unknown) => value is S,
  fallback: StepPicker<S, C>,
  option = 'script',
): StepPicker<S, C> {
  if (isStep(script)) return () => script;
  if (typeof script === 'function') return script as StepPicker<S, C>;
  if (typeof script !== 'object' || script === null) {
    throw new InvalidOptionsError(option, 'expected a step, a function, or { sequence | repeat | mix }');
  }
  if ('sequence' in script) {
    const steps = checkSteps(script.sequence, isStep, `${option}.sequence`, true);
    const then =
      script.then === undefined ? fallback : compileScript(script.then, isStep, fallback, `${option}.then`);
    return (call) =>
      call.index < steps.length
        ? (steps[call.index] as S)
        : then({ ...call, index: call.index - steps.length });
  }
  if ('repeat' in script) {
    const steps = checkSteps(script.repeat, isStep, `${option}.repeat`, false);
    return (call) => steps[call.index % steps.length] as S;
  }
  if ('mix' in script) {
    const random = script.random ?? Math.random;
    assertFunction(`${option}.random`, random);
    const entries = script.mix;
    let total = 0;
    entries.forEach(([weight, step], i) => {
      assertNumber(`${option}.mix[${i}][0]`, weight, 0);
      checkSteps([step], isStep, `${option}.mix[${i}][1]`, false);
      total += weight;
    });
    if (!(total > 0)) throw new InvalidOptionsError(`${option}.mix`, 'expected weights with a positive sum');
    return () => {
      let pick = random() * total;
      for (const [weight, step] of entries) {
        if (pick < weight) return step;
        pick -= weight;
      }
      // random() returned 1 (or rounding): the last step with weight.
      return entries.findLast(([weight]) => weight > 0)?.[1] as S;
    };
  }
  throw new InvalidOptionsError(option, 'expected a step, a function, or { sequence | repeat | mix }');
}

function checkSteps<S>(
  steps: readonly unknown[],
  isStep: (value: unknown) => value is S,
  option: string,
  allowEmpty: boolean,
): readonly S[] {
  if (!Array.isArray(steps) || (!allowEmpty && steps.length === 0)) {
    throw new InvalidOptionsError(option, `expected a${allowEmpty ? 'n' : ' non-empty'} array of steps`);
  }
  steps.forEach((step, i) => {
    if (!isStep(step)) throw new InvalidOptionsError(`${option}[${i}]`, 'expected a step');
  });
  return steps as readonly S[];
}

/** Counts things and lets a test wait (bounded, in real time) until a count is reached. */
export class Counter {
  #total = 0;
  readonly #byKind = new Map<string, number>();
  #waiters: { n: number; resolve: () => void }[] = [];

  get total(): number {
    return this.#total;
  }

  /** Counts per kind (e.g. '200', '503', 'stall', 'reset', 'return', 'throw'). */
  get byKind(): Readonly<Record<string, number>> {
    return Object.fromEntries(this.#byKind);
  }

  count(kind: string): void {
    this.#byKind.set(kind, (this.#byKind.get(kind) ?? 0) + 1);
  }

  increment(): number {
    const index = this.#total++;
    if (this.#waiters.length > 0) {
      const ready = this.#waiters.filter((w) => this.#total >= w.n);
      this.#waiters = this.#waiters.filter((w) => this.#total < w.n);
      for (const waiter of ready) waiter.resolve();
    }
    return index;
  }

  /** Resolves once the total reaches `n`; rejects after `timeoutMs` of real time so no test hangs. */
  waitFor(n: number, timeoutMs: number, what: string): Promise<void> {
    if (this.#total >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${n} ${what} (saw ${this.#total})`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }
}
