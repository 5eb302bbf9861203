import { PostgresComponent, type PostgresComponentOptions, postgresTypes } from '@stratus/sql';
import type { Pool } from 'pg';
import {
  checkListQuery,
  checkSagaId,
  checkSagaRecord,
  type ListSagasQuery,
  type SagaRecord,
  type SagaStore,
} from './saga-store.js';

export type PostgresSagaStoreOptions = PostgresComponentOptions;

// The document is kept as text, not jsonb, so it comes back exactly as written (jsonb would reorder keys).
// Ids sort with the "C" collation: byte order, as SQLite and the memory store sort them.
const migrations = (s: string) => [
  `CREATE TABLE "${s}".coord_sagas (
     saga_id text COLLATE "C" PRIMARY KEY,
     definition text NOT NULL,
     status text NOT NULL,
     version bigint NOT NULL,
     document text NOT NULL,
     updated_at double precision NOT NULL
   );
   CREATE INDEX coord_sagas_by_status ON "${s}".coord_sagas (status, saga_id);`,
];

/** Sagas in PostgreSQL, for engines on many hosts: each write is one statement with a version check. */
export class PostgresSagaStore implements SagaStore {
  readonly kind = 'postgres';
  readonly pool: Pool;
  readonly schema: string;
  readonly #component: PostgresComponent;

  constructor(options: PostgresSagaStoreOptions) {
    this.#component = new PostgresComponent('coordination-sagas', options, migrations);
    this.pool = this.#component.pool;
    this.schema = this.#component.schema;
  }

  /** Creates the table if needed (done on first use). */
  migrate(): Promise<void> {
    return this.#component.migrate();
  }

  async insert(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record, true);
    await this.migrate();
    const { rowCount } = await this.pool.query(
      `INSERT INTO "${this.schema}".coord_sagas (saga_id, definition, status, version, document, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (saga_id) DO NOTHING`,
      [
        record.sagaId,
        record.definition,
        record.status,
        record.version,
        JSON.stringify(record),
        record.updatedAt,
      ],
    );
    return rowCount === 1;
  }

  async get(sagaId: string): Promise<SagaRecord | undefined> {
    checkSagaId(sagaId);
    await this.migrate();
    const { rows } = await this.pool.query<{ document: string }>({
      text: `SELECT document FROM "${this.schema}".coord_sagas WHERE saga_id = $1`,
      values: [sagaId],
      types: postgresTypes,
    });
    const row = rows[0];
    return row === undefined ? undefined : (JSON.parse(row.document) as SagaRecord);
  }

  async update(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record);
    await this.migrate();
    const { rowCount } = await this.pool.query(
      `UPDATE "${this.schema}".coord_sagas SET status = $2, version = $3, document = $4, updated_at = $5
       WHERE saga_id = $1 AND version = $6`,
      [
        record.sagaId,
        record.status,
        record.version,
        JSON.stringify(record),
        record.updatedAt,
        record.version - 1,
      ],
    );
    return rowCount === 1;
  }

  async list(query?: ListSagasQuery): Promise<SagaRecord[]> {
    const { limit, statuses, after } = checkListQuery(query);
    if (statuses.length === 0) return [];
    await this.migrate();
    const { rows } = await this.pool.query<{ document: string }>({
      text: `SELECT document FROM "${this.schema}".coord_sagas
       WHERE status = ANY($1::text[]) AND saga_id > $2 ORDER BY saga_id LIMIT $3`,
      values: [statuses, after ?? '', limit],
      types: postgresTypes,
    });
    return rows.map((row) => JSON.parse(row.document) as SagaRecord);
  }
}
