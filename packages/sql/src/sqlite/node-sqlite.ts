import { BaseSqlite } from './base-sqlite.js';
import type { SqliteStatement, SqliteValue } from './database.js';

/** The part of `node:sqlite` used here (typed locally: @types/node for Node 20 does not describe it). */
export interface NodeSqliteStatement {
  run(...params: SqliteValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: SqliteValue[]): unknown;
  all(...params: SqliteValue[]): unknown[];
}
export interface NodeSqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): NodeSqliteStatement;
  close(): void;
  readonly isOpen?: boolean;
  /** Node 22.16+ / 24; older versions lack it and the transaction depth tracked here is used instead. */
  readonly isTransaction?: boolean;
}
export interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { enableForeignKeyConstraints?: boolean }) => NodeSqliteDatabase;
}

/** The `node:sqlite` binding. */
export class NodeSqlite extends BaseSqlite {
  readonly driver = 'node:sqlite';
  readonly handle: NodeSqliteDatabase;

  constructor(handle: NodeSqliteDatabase, path: string) {
    super(path);
    this.handle = handle;
  }

  get isOpen(): boolean {
    return this.handle.isOpen ?? true;
  }

  protected get driverInTransaction(): boolean | undefined {
    return this.handle.isTransaction;
  }

  protected execHandle(sql: string): void {
    this.handle.exec(sql);
  }

  protected compile(sql: string): SqliteStatement {
    const statement = this.handle.prepare(sql);
    return {
      run(...params) {
        const { changes, lastInsertRowid } = statement.run(...params);
        return { changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) };
      },
      get<T>(...params: SqliteValue[]) {
        return statement.get(...params) as T | undefined;
      },
      all<T>(...params: SqliteValue[]) {
        return statement.all(...params) as T[];
      },
    };
  }

  protected closeHandle(): void {
    this.handle.close();
  }
}
