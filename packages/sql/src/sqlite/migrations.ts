import type { SqliteDatabase } from './database.js';

/**
 * Brings `component`'s tables up to date: `migrations[i]` is the SQL that takes the schema from version i to
 * i + 1. Versions live in `stratus_schema` (one row per component: messaging, outbox, inbox...), so each component
 * evolves on its own. Migrations only ever append, so an older Stratus keeps working on a newer schema.
 *
 * Safe when several processes open a fresh file at once: the check is repeated under the write lock
 * (`BEGIN IMMEDIATE`), so exactly one of them applies each step. An up-to-date schema costs one read.
 */
export function migrateSqlite(
  database: SqliteDatabase,
  component: string,
  migrations: readonly string[],
): void {
  if (schemaVersion(database, component) >= migrations.length) return;
  database.transaction(() => {
    database.exec(
      'CREATE TABLE IF NOT EXISTS stratus_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
    );
    const current = schemaVersion(database, component);
    if (current >= migrations.length) return;
    for (let version = current; version < migrations.length; version++) {
      database.exec(migrations[version] as string);
    }
    database
      .prepare(
        'INSERT INTO stratus_schema (component, version) VALUES (?, ?) ' +
          'ON CONFLICT (component) DO UPDATE SET version = excluded.version',
      )
      .run(component, migrations.length);
  });
}

/** The component's schema version in the database; 0 when it has none yet. */
export function schemaVersion(database: SqliteDatabase, component: string): number {
  const table = database
    .prepare("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'stratus_schema'")
    .get();
  if (table === undefined) return 0;
  const row = database
    .prepare('SELECT version FROM stratus_schema WHERE component = ?')
    .get<{ version: number }>(component);
  return row?.version ?? 0;
}
