// Connections to the test PostgreSQL: the kit's own, the pools a suite hands out, and ending them as the server would.
import assert from 'node:assert/strict';
import pg from 'pg';
import { waitUntil } from './virtual-clock.js';

/** Runs `fn` on a connection of its own to `url`, ended afterwards. */
export async function withPostgres<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {
    // Reported through the failing query; an idle client's socket error must not crash the test process.
  });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * pg Pools on a suite's database, as separate processes would have them; `end()` (in the suite's `after`) ends every
 * pool handed out. Connection errors of a pool (a server restart, a database dropped) are ignored: the queries see them.
 */
export function suitePools(url: string | undefined, max = 8): { pool(): pg.Pool; end(): Promise<void> } {
  const pools: pg.Pool[] = [];
  return {
    pool() {
      const pool = new pg.Pool({ connectionString: url, max });
      pool.on('error', () => {});
      pools.push(pool);
      return pool;
    },
    async end() {
      for (const pool of pools.splice(0)) await pool.end();
    },
  };
}

export interface TerminateConnectionsOptions {
  /**
   * Only the connections whose statement (the one running, or the last one of a connection at rest) contains this
   * text; for a statement just sent, waits until a connection shows it.
   */
  readonly statement?: string;
  /** How long to wait for such a connection, and for each server process to end; default 10 000. */
  readonly timeoutMs?: number;
}

/**
 * Ends connections to the database of `url` as an operator, a server restart or a fail-over would
 * (`pg_terminate_backend`, from a connection of its own): every other one, or those of `statement`. Resolves once
 * their server processes are gone (within `timeoutMs`), with how many it ended. Their clients hear of it a moment
 * later: a query running fails with 57P01, and the client raises 'error' (the pool's 'error' for one idle in a pool).
 */
export async function terminateConnections(
  url: string,
  options: TerminateConnectionsOptions = {},
): Promise<number> {
  const { statement, timeoutMs = 10_000 } = options;
  return withPostgres(url, async (client) => {
    let ended = 0;
    await waitUntil(
      async () => {
        const { rows } = await client.query<{ ended: boolean }>(
          `SELECT pg_terminate_backend(pid, $2) AS ended FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
             AND ($1::text IS NULL OR strpos(query, $1) > 0)`,
          [statement ?? null, timeoutMs],
        );
        // false for a connection that ended by itself meanwhile.
        ended = rows.filter((row) => row.ended).length;
        return statement === undefined || ended > 0;
      },
      `a connection to ${url} shows ${JSON.stringify(statement)}`,
      timeoutMs,
    );
    return ended;
  });
}

/**
 * True for the error of a query whose connection the server ended mid-way (terminateConnections, a shutdown): a pg
 * DatabaseError with SQLSTATE 57P01, admin_shutdown. For `assert.rejects(query, terminatedByServer)`.
 */
export function terminatedByServer(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '57P01';
}

/**
 * Resolves once `client`'s connection has ended; by then pg has raised its loss as the client's 'error' event. Unlike
 * `events.once(client, 'end')` it does not listen for 'error', which a test that the loss does not end the process
 * must leave to the code under test.
 */
function connectionEnded(client: pg.ClientBase): Promise<void> {
  return new Promise((resolve) => client.once('end', () => resolve()));
}

/**
 * Ends the connection an operation holds, as a restart would, twice: while the operation is between two statements,
 * then while it runs one. `operation(work)` checks a connection out (for a transaction, an effect...), runs `work` on
 * it and gives it back. Each time the operation must fail (with pg's "not queryable" error, then with 57P01), and
 * only after the connection's end, by which time pg has raised the loss as the client's 'error' event: an operation
 * that does not hear it ends the process instead.
 */
export async function terminateWhileHeld(
  url: string,
  operation: (work: (client: pg.ClientBase) => Promise<void>) => Promise<unknown>,
): Promise<void> {
  const marker = "SELECT 'held between two statements'";
  // pg_stat_activity shows the marker while it still runs: ending the connection then would fail the marker itself
  // (57P01). Terminate only once its answer is back, when the connection is surely between two statements.
  let markerAnswered!: () => void;
  const answered = new Promise<void>((resolve) => {
    markerAnswered = resolve;
  });
  // Each failure is expected before the termination is confirmed: wait for it from the start.
  const betweenTwo = assert.rejects(
    operation(async (client) => {
      const gone = connectionEnded(client);
      await client.query(marker);
      markerAnswered();
      await gone;
      await client.query('SELECT 1');
    }),
    /not queryable/,
  );
  await Promise.race([answered, betweenTwo]);
  assert.equal(await terminateConnections(url, { statement: marker }), 1, 'the connection held between two');
  await betweenTwo;

  let gone: Promise<void> | undefined;
  const inOne = assert.rejects(
    operation(async (client) => {
      gone = connectionEnded(client);
      await client.query('SELECT pg_sleep(60)');
    }),
    terminatedByServer,
  );
  assert.equal(
    await terminateConnections(url, { statement: 'pg_sleep(60)' }),
    1,
    'the connection in a query',
  );
  await inOne;
  await gone;
}
