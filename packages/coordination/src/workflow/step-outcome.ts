/** What running one step came to: the step driver turns it into the state record's next transition. */
export type StepOutcome =
  /** The step's result; `next` is the index of the step to go on at when it is not the following one. */
  | { readonly kind: 'done'; readonly value: unknown; readonly next?: number }
  /** The step waits (a sleep, a signal) until `until`, or until `signal` arrives. */
  | { readonly kind: 'park'; readonly until: number; readonly signal: string | null }
  | {
      readonly kind: 'error';
      readonly error: unknown;
      readonly reason: 'error' | 'permanent' | 'signal-timeout';
    }
  /** Complete By passed or the engine is closing: the step returns nothing, and nothing is recorded for it. */
  | { readonly kind: 'late'; readonly error: unknown };
