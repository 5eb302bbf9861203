import { InvalidOptionsError } from '@stratus/core';
import { checkOut, PostgresComponent, type PostgresComponentOptions, postgresTypes } from '@stratus/sql';
import type { Pool, PoolClient, QueryResult } from 'pg';
import type { ProjectionTarget, ViewStatus, ViewVersionState } from './target.js';

/** The pool (often the event store's) and the schema of the registry table; views' tables go where their setup puts them. */
export type PostgresProjectionTargetOptions = PostgresComponentOptions;

const migrations = (schema: string) => [
  `CREATE TABLE "${schema}".es_views (
     name text NOT NULL,
     version int NOT NULL,
     status text NOT NULL,
     position bigint NOT NULL,
     last_event_at double precision NOT NULL,
     owner text,
     lease_until double precision NOT NULL,
     PRIMARY KEY (name, version)
   )`,
];

interface ViewRow {
  name: string;
  version: number;
  status: ViewStatus;
  position: string;
  last_event_at: number;
  owner: string | null;
  lease_until: number;
}

/**
 * Views in PostgreSQL. Apply functions get the client of the commit's transaction (`tx.query(...)`) and may be
 * asynchronous. The commit first moves the registry row (locking it), so two runners can never interleave batches
 * of one view, and a runner that lost its lease finds no row to move and rolls back. A batch's statements run with
 * generic plans (`plan_cache_mode = force_generic_plan` for its transaction): name them (prepared statements) and
 * they are planned once per connection.
 */
export class PostgresProjectionTarget implements ProjectionTarget<PoolClient> {
  readonly kind = 'postgres';
  readonly pool: Pool;
  readonly schema: string;
  readonly #component: PostgresComponent;
  readonly #table: string;

  constructor(options: PostgresProjectionTargetOptions) {
    this.#component = new PostgresComponent('projections', options, migrations);
    this.pool = this.#component.pool;
    this.schema = this.#component.schema;
    this.#table = this.#component.qualified('es_views');
  }

  #migrated(): Promise<void> {
    return this.#component.migrate();
  }

  /** Runs `work` in a transaction; a `false` result rolls it back. */
  async #transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.#transactionFrom(undefined, work);
  }

  /**
   * Runs `work` in a transaction that starts with `first(client)` (a statement without parameters, sent with BEGIN in
   * one round trip; its rows count goes to `work`); a `false` result rolls it back.
   */
  async #transactionFrom<T>(
    first: ((client: PoolClient) => string) | undefined,
    work: (client: PoolClient, firstRowCount: number) => Promise<T>,
  ): Promise<T> {
    await this.#migrated();
    const client = await checkOut(this.pool);
    try {
      let firstRowCount = 0;
      if (first === undefined) await client.query('BEGIN');
      else {
        // A simple query of two statements answers one result each.
        // Generic plans for the batch: its statements are the same every batch, and planning them per call (which
        // parameter arrays make the planner prefer) cost more than running them.
        const results = (await client.query(
          `BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; ${first(client)}`,
        )) as unknown as QueryResult[];
        firstRowCount = results[2]?.rowCount ?? 0;
      }
      const result = await work(client, firstRowCount);
      await client.query(result === false ? 'ROLLBACK' : 'COMMIT');
      client.release();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      client.release(error instanceof Error ? error : true);
      throw error;
    }
  }

  async prepare(
    name: string,
    version: number,
    setup: (tx: PoolClient) => void | Promise<void>,
  ): Promise<void> {
    await this.#transaction(async (client) => {
      // The advisory lock makes concurrent prepares of one view wait, so setup runs once.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`stratus:view:${name}:${version}`]);
      const { rowCount } = await client.query(
        `SELECT 1 FROM ${this.#table} WHERE name = $1 AND version = $2`,
        [name, version],
      );
      if (rowCount === 1) return;
      await setup(client);
      await client.query(
        `INSERT INTO ${this.#table} (name, version, status, position, last_event_at, owner, lease_until)
         VALUES ($1, $2, 'building', 0, 0, NULL, 0)`,
        [name, version],
      );
    });
  }

  async acquireLease(
    name: string,
    version: number,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<boolean> {
    await this.#migrated();
    const { rowCount } = await this.pool.query(
      `UPDATE ${this.#table} SET owner = $3, lease_until = $4
       WHERE name = $1 AND version = $2 AND (owner IS NULL OR owner = $3 OR lease_until < $5)`,
      [name, version, owner, now + ttlMs, now],
    );
    return rowCount === 1;
  }

  async releaseLease(name: string, version: number, owner: string): Promise<void> {
    await this.#migrated();
    await this.pool.query(
      `UPDATE ${this.#table} SET owner = NULL, lease_until = 0 WHERE name = $1 AND version = $2 AND owner = $3`,
      [name, version, owner],
    );
  }

  commit(
    name: string,
    version: number,
    owner: string,
    from: number,
    position: number,
    lastEventAt: number,
    apply: (tx: PoolClient) => void | Promise<void>,
  ): Promise<boolean> {
    for (const [field, value] of Object.entries({ version, from, position, lastEventAt })) {
      if (!Number.isFinite(value))
        throw new InvalidOptionsError(field, `expected a finite number, got ${value}`);
    }
    // The registry row moves in BEGIN's round trip, its values written out (the strings escaped by the driver).
    const move = (client: PoolClient) =>
      `UPDATE ${this.#table} SET position = ${position}, last_event_at = ${lastEventAt}
       WHERE name = ${client.escapeLiteral(name)} AND version = ${version}
         AND owner = ${client.escapeLiteral(owner)} AND position = ${from}`;
    return this.#transactionFrom(move, async (client, moved) => {
      if (moved !== 1) return false;
      await apply(client);
      return true;
    });
  }

  async activate(name: string, version: number): Promise<void> {
    await this.#transaction(async (client) => {
      // Serialises activations of one view: exactly one version is active afterwards.
      const { rows } = await client.query<{ version: number }>({
        text: `SELECT version FROM ${this.#table} WHERE name = $1 ORDER BY version FOR UPDATE`,
        values: [name],
        types: postgresTypes,
      });
      if (!rows.some((row) => row.version === version)) {
        throw new InvalidOptionsError('version', `view "${name}" has no version ${version}`);
      }
      await client.query(
        `UPDATE ${this.#table} SET status = CASE WHEN version = $2 THEN 'active' ELSE 'retired' END
         WHERE name = $1 AND (version = $2 OR status = 'active')`,
        [name, version],
      );
    });
  }

  async versions(name: string): Promise<ViewVersionState[]> {
    await this.#migrated();
    const { rows } = await this.pool.query<ViewRow>({
      text: `SELECT * FROM ${this.#table} WHERE name = $1 ORDER BY version`,
      values: [name],
      types: postgresTypes,
    });
    return rows.map((row) => ({
      name: row.name,
      version: row.version,
      status: row.status,
      position: Number(row.position),
      lastEventAt: row.last_event_at,
      owner: row.owner ?? undefined,
      leaseUntil: row.lease_until,
    }));
  }

  async remove(
    name: string,
    version: number,
    teardown: (tx: PoolClient) => void | Promise<void>,
  ): Promise<void> {
    await this.#transaction(async (client) => {
      await teardown(client);
      await client.query(`DELETE FROM ${this.#table} WHERE name = $1 AND version = $2`, [name, version]);
    });
  }
}
