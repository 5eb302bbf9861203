/**
 * The PostgreSQL servers of the messaging suite: DATABASE_URL when set, else throwaway ones started through
 * @stratus/testkit, one with PostgreSQL's durable defaults (fsync, synchronous_commit, full_page_writes on) and
 * one with durability off (the test kit's usual settings). Every implementation gets a database of its own.
 */
import { startPostgres } from '@stratus/testkit';
import pg from 'pg';

export interface PostgresTarget {
  /** "durable" or "nosync" for a server started here, "DATABASE_URL" otherwise. */
  readonly label: string;
  /** What the server reports: version, fsync, synchronous_commit, full_page_writes. */
  readonly settings: Record<string, string>;
  /** Creates (or recreates) a database and returns its URL. */
  database(name: string): Promise<string>;
  /** Reclaims the space of deleted rows in a database, between measurements. */
  vacuum(url: string): Promise<void>;
  /** Drops the databases made here and stops the server if it was started here. */
  close(): Promise<void>;
}

const withClient = async <T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
};

const SETTINGS_QUERY = `SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
  current_setting('synchronous_commit') AS synchronous_commit, current_setting('full_page_writes') AS full_page_writes`;

export async function acquirePostgres(
  durable: boolean,
  env: Record<string, string | undefined> = process.env,
): Promise<PostgresTarget> {
  const given = env.DATABASE_URL;
  const server = given ? undefined : await startPostgres({ env, durable });
  const adminUrl = given ?? (server as { url: string }).url;
  const label = given ? 'DATABASE_URL' : durable ? 'durable' : 'nosync';
  const settings = await withClient(adminUrl, async (client) => {
    const { rows } = await client.query<Record<string, string>>(SETTINGS_QUERY);
    return rows[0] ?? {};
  });
  const made: string[] = [];
  const urlOf = (database: string) => {
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  };
  return {
    label,
    settings,
    async database(name) {
      await withClient(adminUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await client.query(`CREATE DATABASE "${name}"`);
      });
      made.push(name);
      return urlOf(name);
    },
    vacuum: (url) => withClient(url, (client) => client.query('VACUUM ANALYZE')).then(() => {}),
    async close() {
      if (server !== undefined) {
        await server.stop();
        return;
      }
      await withClient(adminUrl, async (client) => {
        for (const name of made) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      });
    },
  };
}
