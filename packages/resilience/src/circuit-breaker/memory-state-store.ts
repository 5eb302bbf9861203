import { KeyedListeners } from './keyed-listeners.js';
import type {
  CircuitStateStore,
  CompareAndSetResult,
  QuorumReport,
  SharedCircuitRecord,
  SharedCircuitState,
} from './state-store.js';

/**
 * The in-process store: breakers of one process that share a circuit (tests, several pipelines per key), and
 * the reference the Redis and PostgreSQL adapters are checked against. Listeners are called asynchronously,
 * as a remote store's would be.
 */
export class MemoryCircuitStateStore implements CircuitStateStore {
  readonly kind = 'memory';
  readonly #records = new Map<string, SharedCircuitRecord>();
  readonly #reports = new Map<string, Map<string, QuorumReport>>();
  readonly #listeners = new KeyedListeners();

  async read(key: string): Promise<SharedCircuitRecord | undefined> {
    return this.#records.get(key);
  }

  async compareAndSet(
    key: string,
    expectedVersion: number,
    state: SharedCircuitState,
  ): Promise<CompareAndSetResult> {
    const current = this.#records.get(key);
    if ((current?.version ?? 0) !== expectedVersion) return { written: false, record: current };
    // A copy, so the caller mutating its object afterwards cannot change what is stored.
    const record: SharedCircuitRecord = structuredClone({ ...state, version: expectedVersion + 1 });
    this.#records.set(key, record);
    for (const listener of this.#listeners.of(key)) queueMicrotask(() => listener(record));
    return { written: true, record };
  }

  async report(key: string, report: QuorumReport, now: number): Promise<readonly QuorumReport[]> {
    let reports = this.#reports.get(key);
    if (reports === undefined) {
      reports = new Map();
      this.#reports.set(key, reports);
    }
    reports.set(report.instanceId, { ...report });
    for (const [id, r] of reports) if (r.expiresAt <= now) reports.delete(id);
    return [...reports.values()];
  }

  async subscribe(
    key: string,
    listener: (record: SharedCircuitRecord) => void,
  ): Promise<() => Promise<void>> {
    const remove = this.#listeners.add(key, listener);
    return async () => {
      remove();
    };
  }
}
