// The PostgreSQL backend's link to the server: the pool, migrating on first use, queries, and LISTEN for watchers.
import {
  type CheckedPostgresConnection,
  migratePostgres,
  NotificationListener,
  type OwnPool,
  openOwnPool,
  postgresTypes,
} from '@stratus/sql';
import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import { UnknownQueueError } from '../errors.js';
import { migrations } from './schema.js';
import { channelOf, UNKNOWN_QUEUE_SQLSTATE } from './sql-parts.js';

export class PostgresConnection {
  readonly schema: string;
  /** How to create the pool the backend owns; undefined when the user gave theirs. */
  readonly #ownPool: OwnPool | undefined;
  #pool: Pool | undefined;
  #ready: Promise<Pool> | undefined;
  readonly #listener: NotificationListener;
  #closed = false;

  constructor(setup: CheckedPostgresConnection) {
    this.#ownPool = setup.ownPool;
    this.#pool = setup.pool;
    this.schema = setup.schema;
    this.#listener = new NotificationListener(
      async () => (await this.ensureReady()).connect(),
      channelOf(setup.schema),
    );
  }

  async query<R extends QueryResultRow>(
    statement: { name: string; text: string },
    values: unknown[],
    queue?: string,
  ): Promise<R[]> {
    const pool = await this.ensureReady();
    try {
      const config: QueryConfig = {
        name: statement.name,
        text: statement.text,
        values,
        types: postgresTypes,
      };
      return (await pool.query<R>(config)).rows;
    } catch (error) {
      if (queue !== undefined && sqlState(error) === UNKNOWN_QUEUE_SQLSTATE)
        throw new UnknownQueueError(queue);
      throw error;
    }
  }

  watch(queue: string, listener: () => void): () => void {
    return this.#listener.watch(queue, listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#listener.close();
    if (this.#ownPool !== undefined) {
      const pool = await this.#ready?.catch(() => undefined);
      await pool?.end();
    }
  }

  /** The pool, with the schema migrated. */
  ensureReady(): Promise<Pool> {
    this.#ready ??= this.#open().catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  async #open(): Promise<Pool> {
    if (this.#closed) throw new Error('The PostgreSQL message backend is closed');
    let pool = this.#pool;
    if (pool === undefined) {
      pool = await openOwnPool(this.#ownPool as OwnPool);
      this.#pool = pool;
    }
    await migratePostgres(pool, this.schema, 'messaging', migrations(this.schema), 'migrations');
    return pool;
  }
}

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
