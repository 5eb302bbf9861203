// The circuit's states and transition reasons, and the numeric codes the breaker keeps them as.

export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** Why the circuit changed state. */
export type CircuitTransitionReason =
  /** The trip rule's threshold was reached while closed. */
  | 'trip-rule'
  /** A failure carried Retry-After (HTTP 429/503): the server said when to come back. */
  | 'retry-after'
  /** The open period ran out: trial calls may go through. */
  | 'open-elapsed'
  /** A trial call failed in half-open. */
  | 'trial-failed'
  /** Enough trial calls succeeded in a row. */
  | 'trials-succeeded'
  | 'isolated'
  /** The last isolation handle was released. */
  | 'released'
  | 'reset'
  /** Taken over from the shared store (another instance changed the circuit). */
  | 'shared'
  /** Enough instances report failing (mode 'quorum'). */
  | 'quorum';

// Numeric states keep the hot-path comparison a single integer check.
export const CLOSED = 0;
export const OPEN = 1;
export const HALF_OPEN = 2;
export const ISOLATED = 3;
export type StateCode = 0 | 1 | 2 | 3;
export const STATE_NAMES: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];
export const STATE_CODES: Readonly<Record<CircuitState, StateCode>> = {
  closed: CLOSED,
  open: OPEN,
  'half-open': HALF_OPEN,
  isolated: ISOLATED,
};

// How a call ended, as far as the circuit is concerned.
export const SUCCEEDED = 0;
export const FAILED = 1;
export const CANCELLED = 2;
export type OutcomeKind = 0 | 1 | 2;
