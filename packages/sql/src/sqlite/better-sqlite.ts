import type BetterSqlite3 from 'better-sqlite3';
import { BaseSqlite } from './base-sqlite.js';
import type { SqliteRow, SqliteStatement, SqliteValue } from './database.js';

/** The better-sqlite3 binding. */
export class BetterSqlite extends BaseSqlite {
  readonly driver = 'better-sqlite3';
  readonly handle: BetterSqlite3.Database;

  constructor(handle: BetterSqlite3.Database, path: string) {
    super(path);
    this.handle = handle;
  }

  get isOpen(): boolean {
    return this.handle.open;
  }

  protected get driverInTransaction(): boolean {
    return this.handle.inTransaction;
  }

  protected execHandle(sql: string): void {
    this.handle.exec(sql);
  }

  protected compile(sql: string): SqliteStatement {
    const statement = this.handle.prepare<SqliteValue[]>(sql);
    return {
      run(...params) {
        const { changes, lastInsertRowid } = statement.run(...params);
        return { changes, lastInsertRowid: Number(lastInsertRowid) };
      },
      get<T>(...params: SqliteValue[]) {
        const row = statement.get(...params) as SqliteRow | undefined;
        return (row === undefined ? undefined : viewBlobs(row)) as T | undefined;
      },
      all<T>(...params: SqliteValue[]) {
        const rows = statement.all(...params) as SqliteRow[];
        for (const row of rows) viewBlobs(row);
        return rows as T[];
      },
    };
  }

  protected closeHandle(): void {
    this.handle.close();
  }
}

/** better-sqlite3 returns BLOBs as Buffers; node:sqlite as Uint8Arrays. Re-view them (no copy) as the latter. */
function viewBlobs(row: SqliteRow): SqliteRow {
  for (const key in row) {
    const value = row[key];
    if (value instanceof Buffer) row[key] = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  return row;
}
