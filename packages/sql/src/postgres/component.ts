import { assertObject, InvalidOptionsError } from '@stratus/core';
import type { Pool } from 'pg';
import { assertSchemaName, migratePostgres } from './migrations.js';

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
    assertSchemaName('schema', schema);
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
