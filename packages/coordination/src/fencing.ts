/**
 * Fencing: a store guarded by the tokens of a lease accepts a write only if its token is at least the highest it
 * has accepted for that resource, so a holder that lost its lease without knowing (paused, partitioned) cannot
 * write after a newer holder did. The check runs inside the caller's own transaction, with the write it guards:
 * both commit, or neither.
 */
import { assertInteger, InvalidOptionsError } from '@stratus/core';
import {
  assertSqliteDatabase,
  migrateSqlite,
  PostgresComponent,
  type PostgresComponentOptions,
  type PostgresTypeParsers,
  postgresTypes,
  type SqliteDatabase,
} from '@stratus/sql';
import type { Pool } from 'pg';
import { StaleFencingTokenError } from './errors.js';

function checkArguments(resource: string, token: number): void {
  if (typeof resource !== 'string' || resource.length === 0 || resource.length > 200) {
    throw new InvalidOptionsError('resource', 'expected a string of 1 to 200 characters');
  }
  assertInteger('token', token, 1);
}

/** Fencing in this process's memory (tests, or resources that live in memory). */
export class MemoryFence {
  readonly #highest = new Map<string, number>();

  /** Accepts `token` for `resource` (and remembers it) or throws StaleFencingTokenError. */
  check(resource: string, token: number): void {
    checkArguments(resource, token);
    const current = this.#highest.get(resource) ?? 0;
    if (token < current) throw new StaleFencingTokenError(resource, token, current);
    this.#highest.set(resource, token);
  }

  highest(resource: string): number {
    return this.#highest.get(resource) ?? 0;
  }
}

const SQLITE_MIGRATIONS = [
  'CREATE TABLE coord_fences (resource TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID;',
];

/** Fencing for writes to a SQLite database: call `check` inside the transaction that writes. */
export class SqliteFence {
  readonly database: SqliteDatabase;

  constructor(options: { readonly database: SqliteDatabase }) {
    const database = options?.database;
    assertSqliteDatabase(database);
    this.database = database;
    migrateSqlite(database, 'fencing', SQLITE_MIGRATIONS);
  }

  /** Accepts `token` for `resource` or throws StaleFencingTokenError (rolling your transaction back). */
  check(resource: string, token: number): void {
    checkArguments(resource, token);
    const accepted = this.database
      .prepare(
        'INSERT INTO coord_fences (resource, token) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE ' +
          'SET token = excluded.token WHERE coord_fences.token <= excluded.token RETURNING token',
      )
      .get(resource, token);
    if (accepted === undefined) throw new StaleFencingTokenError(resource, token, this.highest(resource));
  }

  highest(resource: string): number {
    return (
      this.database
        .prepare('SELECT token FROM coord_fences WHERE resource = ?')
        .get<{ token: number }>(resource)?.token ?? 0
    );
  }
}

/** Anything that runs a query: a pg Pool, a Client, or the PoolClient of your open transaction. */
export interface Queryable {
  query<R extends object = Record<string, unknown>>(config: {
    text: string;
    values?: unknown[];
    types?: PostgresTypeParsers;
  }): Promise<{ rows: R[] }>;
}

/**
 * Fencing for writes to PostgreSQL: call `check(client, ...)` with the client of the transaction that writes.
 * The upsert locks the resource's row until that transaction ends, so guarded writers of one resource serialise.
 */
export class PostgresFence {
  readonly pool: Pool;
  readonly schema: string;
  readonly #component: PostgresComponent;

  constructor(options: PostgresComponentOptions) {
    this.#component = new PostgresComponent('fencing', options, (schema) => [
      `CREATE TABLE "${schema}".coord_fences (resource text PRIMARY KEY, token bigint NOT NULL)`,
    ]);
    this.pool = this.#component.pool;
    this.schema = this.#component.schema;
  }

  /** Creates the table if needed; `check` cannot do it inside your transaction, so call this once at start. */
  migrate(): Promise<void> {
    return this.#component.migrate();
  }

  /** Accepts `token` for `resource` or throws StaleFencingTokenError (roll your transaction back). */
  async check(client: Queryable, resource: string, token: number): Promise<void> {
    checkArguments(resource, token);
    const { rows } = await client.query({
      text: `INSERT INTO "${this.schema}".coord_fences AS f (resource, token) VALUES ($1, $2)
       ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE f.token <= excluded.token
       RETURNING token`,
      values: [resource, token],
    });
    if (rows.length === 0)
      throw new StaleFencingTokenError(resource, token, await this.highest(client, resource));
  }

  async highest(client: Queryable, resource: string): Promise<number> {
    const { rows } = await client.query<{ token: string }>({
      text: `SELECT token FROM "${this.schema}".coord_fences WHERE resource = $1`,
      values: [resource],
      types: postgresTypes,
    });
    return rows[0] === undefined ? 0 : Number(rows[0].token);
  }
}
