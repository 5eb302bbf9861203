import { assertSqliteDatabase, migrateSqlite, type SqliteDatabase } from '@stratus/sql';
import {
  type AcquireRequest,
  type AcquireResult,
  checkAcquireRequest,
  checkHeldLease,
  type LeaseGrant,
  type LeaseHolder,
  type LeaseStore,
} from './lease-store.js';

const MIGRATIONS = [
  `CREATE TABLE coord_lease_holders (
     name TEXT NOT NULL,
     owner TEXT NOT NULL,
     token INTEGER NOT NULL,
     expires_at REAL NOT NULL,
     PRIMARY KEY (name, owner)
   ) WITHOUT ROWID;
   CREATE TABLE coord_lease_tokens (name TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID;`,
];

interface HolderRow {
  owner: string;
  token: number;
  expires_at: number;
}

const holder = (row: HolderRow): LeaseHolder => ({
  owner: row.owner,
  token: row.token,
  expiresAt: row.expires_at,
});

/**
 * Leases in a SQLite database file, shared by every process that opens it. Each acquisition is one write
 * transaction, so acquisitions of a lease are serialised by SQLite's write lock; the last token of each name is
 * kept apart from the holders, so tokens keep growing after every release. A process paused (SIGSTOP, a debugger)
 * in the middle of a call keeps the file's write lock, and no other process can take a lease until it resumes:
 * processes that can be paused that way need the PostgreSQL or Redis store, whose calls run on the server.
 */
export class SqliteLeaseStore implements LeaseStore {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;

  constructor(options: { readonly database: SqliteDatabase }) {
    const database = options?.database;
    assertSqliteDatabase(database);
    this.database = database;
    migrateSqlite(database, 'coordination', MIGRATIONS);
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const limit = checkAcquireRequest(request);
    const { name, owner, ttlMs, now } = request;
    const db = this.database;
    const expiresAt = now + ttlMs;
    return db.transactionAsync((): AcquireResult => {
      db.prepare('DELETE FROM coord_lease_holders WHERE name = ? AND expires_at <= ?').run(name, now);
      const held = db
        .prepare('UPDATE coord_lease_holders SET expires_at = ? WHERE name = ? AND owner = ? RETURNING token')
        .get<{ token: number }>(expiresAt, name, owner);
      if (held !== undefined) {
        return { acquired: true, renewed: true, grant: { name, owner, token: held.token, expiresAt } };
      }
      const holders = this.#holders(name);
      if (holders.length >= limit) return { acquired: false, holders };
      const next = db
        .prepare(
          'INSERT INTO coord_lease_tokens (name, token) VALUES (?, 1) ' +
            'ON CONFLICT (name) DO UPDATE SET token = token + 1 RETURNING token',
        )
        .get<{ token: number }>(name) as { token: number };
      db.prepare('INSERT INTO coord_lease_holders (name, owner, token, expires_at) VALUES (?, ?, ?, ?)').run(
        name,
        owner,
        next.token,
        expiresAt,
      );
      return { acquired: true, renewed: false, grant: { name, owner, token: next.token, expiresAt } };
    });
  }

  async renew(
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | undefined> {
    checkHeldLease(name, owner, token, ttlMs, now);
    const db = this.database;
    const expiresAt = now + ttlMs;
    const changed = await db.transactionAsync(
      () =>
        db
          .prepare(
            'UPDATE coord_lease_holders SET expires_at = ? ' +
              'WHERE name = ? AND owner = ? AND token = ? AND expires_at > ?',
          )
          .run(expiresAt, name, owner, token, now).changes,
    );
    return changed === 1 ? { name, owner, token, expiresAt } : undefined;
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    checkHeldLease(name, owner, token);
    const db = this.database;
    const changed = await db.transactionAsync(
      () =>
        db
          .prepare('DELETE FROM coord_lease_holders WHERE name = ? AND owner = ? AND token = ?')
          .run(name, owner, token).changes,
    );
    return changed === 1;
  }

  async holders(name: string, now: number): Promise<LeaseHolder[]> {
    return this.#holders(name).filter((h) => h.expiresAt > now);
  }

  #holders(name: string): LeaseHolder[] {
    return this.database
      .prepare(
        'SELECT owner, token, expires_at FROM coord_lease_holders WHERE name = ? ORDER BY expires_at, token',
      )
      .all<HolderRow>(name)
      .map(holder);
  }
}
