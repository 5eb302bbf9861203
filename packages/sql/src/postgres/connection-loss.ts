// What keeps a process running when PostgreSQL ends one of its connections (a restart, a fail-over, an operator's
// pg_terminate_backend): pg raises the loss as the client's 'error' event, and an 'error' event nobody hears ends the
// process.
import type { Pool, PoolClient } from 'pg';

/** The clients given our listener, so that one checked out many times holds a single one. */
const hearing = new WeakSet<PoolClient>();

/** The loss is not lost on the holder: its query fails (see hearConnectionErrors). */
const ignore = (): void => {};

/**
 * Gives `client` an 'error' listener for the rest of its life, and returns it. A connection PostgreSQL ends while its
 * holder runs no query (between two queries of a transaction, while it LISTENs), or just after a query it failed, is
 * raised as the client's 'error' event, which pg-pool hears only while the client is idle in the pool. Heard, the
 * holder learns of the loss from its query, which fails, and releases the client; the pool drops it and connects
 * anew.
 */
export function hearConnectionErrors(client: PoolClient): PoolClient {
  if (!hearing.has(client)) {
    hearing.add(client);
    client.on('error', ignore);
  }
  return client;
}

/**
 * Checks a connection out of `pool` (yours or ours) for work of several queries, a transaction or a LISTEN: if
 * PostgreSQL ends it meanwhile, the holder's query fails and the process keeps running (hearConnectionErrors).
 */
export async function checkOut(pool: Pick<Pool, 'connect'>): Promise<PoolClient> {
  return hearConnectionErrors(await pool.connect());
}

/**
 * Makes `pool` outlive the connections PostgreSQL ends: one idle in the pool leaves it (the pool's 'error', heard
 * here), one checked out fails its holder's next query (hearConnectionErrors on every client), and the next checkout
 * connects anew.
 */
export function keepPoolAlive(pool: Pool): Pool {
  pool.on('error', ignore);
  pool.on('connect', hearConnectionErrors);
  return pool;
}
