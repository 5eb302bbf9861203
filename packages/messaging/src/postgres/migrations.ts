import { assertObject, InvalidOptionsError, postgresTypes } from '@stratus/core';
import type { Pool } from 'pg';
import { advisoryKey } from './schema.js';

/**
 * Brings `component`'s tables in `schema` up to date: `migrations[i]` takes it from version i to i + 1. Versions
 * live in `<schema>.stratus_schema`, one row per component (messaging, eventstore...), so each evolves on its own.
 * All missing steps run in one transaction under an advisory lock, so processes starting together migrate once and
 * the others find the schema ready. `legacyTable` names a table an earlier release kept this component's version in
 * (`version` column), adopted the first time.
 */
export async function migratePostgres(
  pool: Pool,
  schema: string,
  component: string,
  migrations: readonly string[],
  legacyTable?: string,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${advisoryKey(`migrations:${schema}`)})`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS "${schema}".stratus_schema (component text PRIMARY KEY, version int NOT NULL)`,
    );
    const { rows } = await client.query<{ version: number }>({
      text: `SELECT version FROM "${schema}".stratus_schema WHERE component = $1`,
      values: [component],
      types: postgresTypes,
    });
    let current = rows[0]?.version;
    if (current === undefined && legacyTable !== undefined) {
      const legacy = `"${schema}".${legacyTable}`;
      const { rows: found } = await client.query<{ found: boolean }>({
        text: 'SELECT to_regclass($1) IS NOT NULL AS found',
        values: [legacy],
        types: postgresTypes,
      });
      if (found[0]?.found) {
        const { rows: old } = await client.query<{ version: number }>({
          text: `SELECT coalesce(max(version), 0) AS version FROM ${legacy}`,
          types: postgresTypes,
        });
        current = old[0]?.version;
      }
    }
    current ??= 0;
    for (let version = current + 1; version <= migrations.length; version++) {
      await client.query(migrations[version - 1] as string);
    }
    if (current < migrations.length || rows.length === 0) {
      await client.query(
        `INSERT INTO "${schema}".stratus_schema (component, version) VALUES ($1, $2)
         ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
        [component, Math.max(current, migrations.length)],
      );
    }
    await client.query('COMMIT');
    client.release();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    client.release(error instanceof Error ? error : true);
    throw error;
  }
}

/** Schema names Stratus accepts: lower-case SQL identifiers short enough to prefix generated names. */
export const POSTGRES_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

export interface PostgresComponentOptions {
  /** Your pg Pool; the component never ends it. */
  readonly pool: Pool;
  /** Schema of the component's tables and functions, created on first use; default 'stratus'. */
  readonly schema?: string;
}

/**
 * What every PostgreSQL adapter of a Stratus component needs: a validated pool and schema, and its migrations run
 * once, on first use (a failed attempt is retried by the next call).
 */
export class PostgresComponent {
  readonly pool: Pool;
  readonly schema: string;
  readonly #component: string;
  readonly #migrations: (schema: string) => readonly string[];
  #ready: Promise<void> | undefined;

  constructor(
    component: string,
    options: PostgresComponentOptions,
    migrations: (schema: string) => readonly string[],
  ) {
    assertObject('options', options as unknown);
    const { pool, schema = 'stratus' } = options;
    if (typeof (pool as Partial<Pool> | undefined)?.query !== 'function') {
      throw new InvalidOptionsError('pool', 'expected a pg Pool');
    }
    if (typeof schema !== 'string' || !POSTGRES_SCHEMA_NAME.test(schema)) {
      throw new InvalidOptionsError(
        'schema',
        'expected a lower-case SQL identifier of at most 40 characters',
      );
    }
    this.pool = pool;
    this.schema = schema;
    this.#component = component;
    this.#migrations = migrations;
  }

  /** The schema-qualified name of one of the component's tables or functions. */
  qualified(name: string): string {
    return `"${this.schema}".${name}`;
  }

  migrate(): Promise<void> {
    this.#ready ??= migratePostgres(
      this.pool,
      this.schema,
      this.#component,
      this.#migrations(this.schema),
    ).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }
}
