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
    const { rows } = await client.query<{ version: number }>(
      `SELECT version FROM "${schema}".stratus_schema WHERE component = $1`,
      [component],
    );
    let current = rows[0]?.version;
    if (current === undefined && legacyTable !== undefined) {
      const legacy = `"${schema}".${legacyTable}`;
      const { rows: found } = await client.query<{ found: boolean }>(
        'SELECT to_regclass($1) IS NOT NULL AS found',
        [legacy],
      );
      if (found[0]?.found) {
        const { rows: old } = await client.query<{ version: number }>(
          `SELECT coalesce(max(version), 0) AS version FROM ${legacy}`,
        );
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
