import { InvalidOptionsError } from '@stratus/core';
import { assertSqliteDatabase, migrateSqlite, type SqliteDatabase } from '@stratus/sql';
import type { ProjectionTarget, ViewStatus, ViewVersionState } from './target.js';

const MIGRATIONS = [
  `CREATE TABLE es_views (
     name TEXT NOT NULL,
     version INTEGER NOT NULL,
     status TEXT NOT NULL,
     position INTEGER NOT NULL,
     last_event_at REAL NOT NULL,
     owner TEXT,
     lease_until REAL NOT NULL,
     PRIMARY KEY (name, version)
   ) WITHOUT ROWID;`,
];

interface ViewRow {
  name: string;
  version: number;
  status: ViewStatus;
  position: number;
  last_event_at: number;
  owner: string | null;
  lease_until: number;
}

/** Rolls the commit's transaction back when the runner no longer owns the view or another batch moved it. */
class Superseded extends Error {}

/**
 * Views in a SQLite database (often the event store's own file). Apply functions get the database and run inside
 * the commit's transaction, synchronously: SQLite transactions cannot span awaits.
 */
export class SqliteProjectionTarget implements ProjectionTarget<SqliteDatabase> {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;

  constructor(options: { readonly database: SqliteDatabase }) {
    const database = options?.database;
    assertSqliteDatabase(database);
    this.database = database;
    migrateSqlite(database, 'projections', MIGRATIONS);
  }

  async prepare(name: string, version: number, setup: (tx: SqliteDatabase) => void): Promise<void> {
    const db = this.database;
    await db.transactionAsync(() => {
      const exists = db
        .prepare('SELECT 1 AS found FROM es_views WHERE name = ? AND version = ?')
        .get(name, version);
      if (exists !== undefined) return;
      mustBeSync(setup(db));
      db.prepare(
        "INSERT INTO es_views (name, version, status, position, last_event_at, owner, lease_until) VALUES (?, ?, 'building', 0, 0, NULL, 0)",
      ).run(name, version);
    });
  }

  async acquireLease(
    name: string,
    version: number,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<boolean> {
    const db = this.database;
    return db.transactionAsync(
      () =>
        db
          .prepare(
            'UPDATE es_views SET owner = ?, lease_until = ? WHERE name = ? AND version = ? ' +
              'AND (owner IS NULL OR owner = ? OR lease_until < ?)',
          )
          .run(owner, now + ttlMs, name, version, owner, now).changes === 1,
    );
  }

  async releaseLease(name: string, version: number, owner: string): Promise<void> {
    const db = this.database;
    await db.transactionAsync(() =>
      db
        .prepare(
          'UPDATE es_views SET owner = NULL, lease_until = 0 WHERE name = ? AND version = ? AND owner = ?',
        )
        .run(name, version, owner),
    );
  }

  async commit(
    name: string,
    version: number,
    owner: string,
    from: number,
    position: number,
    lastEventAt: number,
    apply: (tx: SqliteDatabase) => void,
  ): Promise<boolean> {
    const db = this.database;
    try {
      await db.transactionAsync(() => {
        const moved = db
          .prepare(
            'UPDATE es_views SET position = ?, last_event_at = ? WHERE name = ? AND version = ? AND owner = ? AND position = ?',
          )
          .run(position, lastEventAt, name, version, owner, from).changes;
        if (moved !== 1) throw new Superseded();
        mustBeSync(apply(db));
      });
      return true;
    } catch (error) {
      if (error instanceof Superseded) return false;
      throw error;
    }
  }

  async activate(name: string, version: number): Promise<void> {
    const db = this.database;
    await db.transactionAsync(() => {
      const found = db
        .prepare('SELECT 1 AS found FROM es_views WHERE name = ? AND version = ?')
        .get(name, version);
      if (found === undefined)
        throw new InvalidOptionsError('version', `view "${name}" has no version ${version}`);
      db.prepare(
        "UPDATE es_views SET status = 'retired' WHERE name = ? AND status = 'active' AND version <> ?",
      ).run(name, version);
      db.prepare("UPDATE es_views SET status = 'active' WHERE name = ? AND version = ?").run(name, version);
    });
  }

  async versions(name: string): Promise<ViewVersionState[]> {
    return this.database
      .prepare('SELECT * FROM es_views WHERE name = ? ORDER BY version')
      .all<ViewRow>(name)
      .map((row) => ({
        name: row.name,
        version: row.version,
        status: row.status,
        position: row.position,
        lastEventAt: row.last_event_at,
        owner: row.owner ?? undefined,
        leaseUntil: row.lease_until,
      }));
  }

  async remove(name: string, version: number, teardown: (tx: SqliteDatabase) => void): Promise<void> {
    const db = this.database;
    await db.transactionAsync(() => {
      mustBeSync(teardown(db));
      db.prepare('DELETE FROM es_views WHERE name = ? AND version = ?').run(name, version);
    });
  }
}

function mustBeSync(result: unknown): void {
  if (result !== undefined && typeof (result as { then?: unknown }).then === 'function') {
    throw new InvalidOptionsError(
      'apply',
      'SQLite projections apply events synchronously (no async functions)',
    );
  }
}
