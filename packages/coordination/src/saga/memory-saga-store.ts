import {
  checkListQuery,
  checkSagaId,
  checkSagaRecord,
  jsonCopy,
  type ListSagasQuery,
  type SagaRecord,
  type SagaStore,
} from './saga-store.js';

/** Sagas in this process's memory: for tests and for sagas that need not survive a restart. */
export class MemorySagaStore implements SagaStore {
  readonly kind = 'memory';
  readonly #sagas = new Map<string, SagaRecord>();

  async insert(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record, true);
    if (this.#sagas.has(record.sagaId)) return false;
    this.#sagas.set(record.sagaId, jsonCopy(record));
    return true;
  }

  async get(sagaId: string): Promise<SagaRecord | undefined> {
    checkSagaId(sagaId);
    const found = this.#sagas.get(sagaId);
    return found === undefined ? undefined : jsonCopy(found);
  }

  async update(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record);
    const stored = this.#sagas.get(record.sagaId);
    if (stored === undefined || stored.version !== record.version - 1) return false;
    this.#sagas.set(record.sagaId, jsonCopy(record));
    return true;
  }

  async list(query?: ListSagasQuery): Promise<SagaRecord[]> {
    const { limit, statuses, after } = checkListQuery(query);
    return [...this.#sagas.values()]
      .filter((s) => statuses.includes(s.status) && (after === undefined || s.sagaId > after))
      .sort((a, b) => (a.sagaId < b.sagaId ? -1 : a.sagaId > b.sagaId ? 1 : 0))
      .slice(0, limit)
      .map(jsonCopy);
  }
}
