/** The slice of a `pg` Pool or Client that {@link createExclusively} needs; core itself does not depend on `pg`. */
export interface DdlQueryable {
  query(sql: string): Promise<unknown>;
}

/**
 * Runs idempotent DDL (`CREATE ... IF NOT EXISTS`, no parameters) under the advisory lock `lockName`. IF NOT EXISTS
 * alone does not make processes that start together safe: the one that loses the race trips on a catalog unique
 * index with 23505, 42P07 or 42710 depending on the moment, so they take turns instead and the later ones find the
 * tables there. One simple-protocol query string runs as one transaction, which holds the lock to the end.
 */
export async function createExclusively(db: DdlQueryable, lockName: string, ddl: string): Promise<void> {
  const literal = `'${lockName.replaceAll("'", "''")}'`;
  await db.query(`SELECT pg_advisory_xact_lock(hashtext(${literal}));\n${ddl}`);
}
