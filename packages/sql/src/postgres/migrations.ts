import { InvalidOptionsError } from '@stratus/core';
import type { Pool, PoolClient } from 'pg';
import { advisoryKey } from './advisory-key.js';
import { checkOut } from './connection-loss.js';
import { postgresTypes } from './types.js';

/** Schema names Stratus accepts: lower-case SQL identifiers short enough to prefix generated names. */
export const POSTGRES_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

/** Throws InvalidOptionsError(option) unless `value` is a schema name Stratus accepts (POSTGRES_SCHEMA_NAME). */
export function assertSchemaName(option: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !POSTGRES_SCHEMA_NAME.test(value)) {
    throw new InvalidOptionsError(
      option,
      `expected a lower-case SQL identifier, got ${JSON.stringify(value)}`,
    );
  }
}

/**
 * Where migrations run: a pg Pool (a connection is taken for the transaction) or one connection of your own (a
 * pg Client or PoolClient, not in a transaction).
 */
export type MigrationTarget = Pick<Pool, 'connect' | 'idleCount'> | Pick<PoolClient, 'query'>;

/**
 * Brings `component`'s tables in `schema` up to date: `migrations[i]` takes it from version i to i + 1. Versions
 * live in `<schema>.stratus_schema`, one row per component (messaging, eventstore...), so each evolves on its own.
 * All missing steps run in one transaction under an advisory lock, so processes starting together migrate once and
 * the others find the schema ready. `legacyTable` names a table an earlier release kept this component's version in
 * (`version` column), adopted the first time.
 */
export async function migratePostgres(
  target: MigrationTarget,
  schema: string,
  component: string,
  migrations: readonly string[],
  legacyTable?: string,
): Promise<void> {
  assertSchemaName('schema', schema);
  // A Client has connect() too (it opens the connection): only a Pool counts its idle connections.
  const pooled = 'idleCount' in target ? await checkOut(target) : undefined;
  const client = pooled ?? (target as Pick<PoolClient, 'query'>);
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
    pooled?.release();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    pooled?.release(error instanceof Error ? error : true);
    throw error;
  }
}

/**
 * migratePostgres for an adapter whose tables are named by its user (`table`, optionally `schema.table`): the
 * version row is `<component>:<table>` in the table's schema, or in `public` for an unqualified name.
 */
export function migratePostgresTable(
  target: MigrationTarget,
  table: string,
  component: string,
  migrations: readonly string[],
): Promise<void> {
  const dot = table.indexOf('.');
  const schema = dot === -1 ? 'public' : table.slice(0, dot).replaceAll('"', '');
  return migratePostgres(target, schema, `${component}:${table.replaceAll('"', '')}`, migrations);
}
