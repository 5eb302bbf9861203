import { assertSqliteDatabase, migrateSqlite, SQLITE_LIMIT, type SqliteDatabase } from '@stratus/sql';
import {
  checkListQuery,
  checkSagaId,
  checkSagaRecord,
  type ListSagasQuery,
  type SagaRecord,
  type SagaStore,
} from './saga-store.js';

const MIGRATIONS = [
  `CREATE TABLE coord_sagas (
     saga_id TEXT PRIMARY KEY,
     definition TEXT NOT NULL,
     status TEXT NOT NULL,
     version INTEGER NOT NULL,
     document TEXT NOT NULL,
     updated_at REAL NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX coord_sagas_by_status ON coord_sagas (status, saga_id);`,
];

/**
 * Sagas in a SQLite database file, shared by every process that opens it; each write is one transaction, and
 * the version check makes concurrent writers of one saga see each other (the loser's update returns false).
 */
export class SqliteSagaStore implements SagaStore {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;

  constructor(options: { readonly database: SqliteDatabase }) {
    const database = options?.database;
    assertSqliteDatabase(database);
    this.database = database;
    migrateSqlite(database, 'coordination-sagas', MIGRATIONS);
  }

  async insert(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record, true);
    const db = this.database;
    const document = JSON.stringify(record);
    const changes = await db.transactionAsync(
      () =>
        db
          .prepare(
            'INSERT INTO coord_sagas (saga_id, definition, status, version, document, updated_at) ' +
              'VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (saga_id) DO NOTHING',
          )
          .run(record.sagaId, record.definition, record.status, record.version, document, record.updatedAt)
          .changes,
    );
    return changes === 1;
  }

  async get(sagaId: string): Promise<SagaRecord | undefined> {
    checkSagaId(sagaId);
    const row = this.database
      .prepare('SELECT document FROM coord_sagas WHERE saga_id = ?')
      .get<{ document: string }>(sagaId);
    return row === undefined ? undefined : (JSON.parse(row.document) as SagaRecord);
  }

  async update(record: SagaRecord): Promise<boolean> {
    checkSagaRecord(record);
    const db = this.database;
    const document = JSON.stringify(record);
    const changes = await db.transactionAsync(
      () =>
        db
          .prepare(
            'UPDATE coord_sagas SET status = ?, version = ?, document = ?, updated_at = ? ' +
              'WHERE saga_id = ? AND version = ?',
          )
          .run(record.status, record.version, document, record.updatedAt, record.sagaId, record.version - 1)
          .changes,
    );
    return changes === 1;
  }

  async list(query?: ListSagasQuery): Promise<SagaRecord[]> {
    const { limit, statuses, after } = checkListQuery(query);
    if (statuses.length === 0) return [];
    const marks = statuses.map(() => '?').join(', ');
    return this.database
      .prepare(
        `SELECT document FROM coord_sagas WHERE status IN (${marks}) AND saga_id > ? ORDER BY saga_id ${SQLITE_LIMIT}`,
      )
      .all<{ document: string }>(...statuses, after ?? '', limit)
      .map((row) => JSON.parse(row.document) as SagaRecord);
  }
}
