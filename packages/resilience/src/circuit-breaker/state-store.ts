/**
 * The port through which breakers in several processes share one circuit: a versioned compare-and-set
 * register per circuit key (mode 'shared') and a table of per-instance verdicts with expiry (mode 'quorum').
 * Adapters stay this small so each can be checked against one contract suite; every decision about what
 * to write lives in the breaker's sync code, not in the adapters.
 *
 * Times are epoch ms from the instances' clocks (keep them NTP-synced; skew shifts open-until by as much).
 */

export type SharedCircuitStateName = 'closed' | 'open' | 'half-open' | 'isolated';

/** The shared state of one circuit, as written. */
export interface SharedCircuitState {
  readonly state: SharedCircuitStateName;
  /** Epoch ms at which an open circuit admits trial calls (0 when closed or isolated). */
  readonly openUntil: number;
  /** Consecutive openings since the circuit last closed: the backoff attempt of the next opening. */
  readonly openCount: number;
  /** The open period used last (the `previous` of the next backoff delay). */
  readonly lastOpenMs: number;
  /** Trial calls in flight cluster-wide while half-open: lease id → lease expiry (epoch ms). */
  readonly trials: Readonly<Record<string, number>>;
  /** Trial successes in a row in the current half-open period. */
  readonly successes: number;
  /** Why the state last changed (a CircuitTransitionReason). */
  readonly reason: string;
  /** A description of the failure that opened the circuit, when it is open. */
  readonly lastFailure?: string;
  /** Epoch ms of the write, and the instance that made it. */
  readonly updatedAt: number;
  readonly updatedBy: string;
}

/** A state as stored: `version` grows by one with every write (1 for the first). */
export interface SharedCircuitRecord extends SharedCircuitState {
  readonly version: number;
}

export interface CompareAndSetResult {
  /** True when the write happened. */
  readonly written: boolean;
  /** The record now stored: the one written, or the one that made the write fail (undefined: none). */
  readonly record: SharedCircuitRecord | undefined;
}

/** One instance's verdict on a circuit (mode 'quorum'). */
export interface QuorumReport {
  readonly instanceId: string;
  /** True while this instance's own calls keep its breaker open. */
  readonly failing: boolean;
  /** Epoch ms since when `failing` has held its value. */
  readonly since: number;
  /** Epoch ms after which the report no longer counts (the instance stopped heartbeating). */
  readonly expiresAt: number;
}

export interface CircuitStateStore {
  /** A short label for events and errors ("memory", "redis", "postgres"). */
  readonly kind: string;
  read(key: string): Promise<SharedCircuitRecord | undefined>;
  /**
   * Writes `state` as version `expectedVersion + 1` if and only if the stored version is `expectedVersion`
   * (0: no record yet). Atomic across every client of the store.
   */
  compareAndSet(
    key: string,
    expectedVersion: number,
    state: SharedCircuitState,
  ): Promise<CompareAndSetResult>;
  /**
   * Upserts `report` (a report whose `expiresAt` <= `now` withdraws the instance), drops reports that
   * expired by `now`, and returns the live ones, `report` included. Atomic.
   */
  report(key: string, report: QuorumReport, now: number): Promise<readonly QuorumReport[]>;
  /**
   * Optional: calls `listener` with each record written for `key` (by any client), soon after the write.
   * Best effort: breakers still poll, so a missed message only delays propagation.
   */
  subscribe?(key: string, listener: (record: SharedCircuitRecord) => void): Promise<() => Promise<void>>;
}

/** The state of a circuit nobody has written yet. */
export const closedCircuitState: Omit<SharedCircuitState, 'updatedAt' | 'updatedBy' | 'reason'> = {
  state: 'closed',
  openUntil: 0,
  openCount: 0,
  lastOpenMs: 0,
  trials: {},
  successes: 0,
};

/** A stored state (JSON text, or an object a driver already parsed) with its version attached. */
export function parseCircuitRecord(version: number | string, stored: string | object): SharedCircuitRecord {
  const data = (typeof stored === 'string' ? JSON.parse(stored) : stored) as SharedCircuitState;
  if (typeof data !== 'object' || data === null || typeof data.state !== 'string') {
    throw new TypeError(`not a circuit state: ${JSON.stringify(stored).slice(0, 200)}`);
  }
  return { ...data, version: Number(version) };
}
