import { type Clock, systemClock } from '@stratus/core';
import { checkOut, migratePostgresTable, migrateSqlite, type SqliteDatabase } from '@stratus/sql';
import type { Pool, PoolClient } from 'pg';
import type { HandlerContext, MessageHandler } from '../message-handler.js';
import type { ReceivedMessage } from '../received-message.js';

/**
 * The inbox makes a handler's effect happen once per message id even though delivery is at least once: the
 * effect and the record "this consumer processed message X" commit in one transaction, so a redelivery (after a
 * crash between commit and complete, say) finds the record and only completes the message.
 */

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,40}(\.[a-z_][a-z0-9_]{0,40})?$/i;

function checkTable(table: string): string {
  if (!TABLE_NAME.test(table)) throw new Error(`invalid inbox table name ${JSON.stringify(table)}`);
  return table;
}

export interface SqliteInboxOptions {
  database: SqliteDatabase;
  /** Default 'stratus_inbox'. */
  table?: string;
  clock?: Clock;
}

export class SqliteInbox {
  readonly database: SqliteDatabase;
  readonly #table: string;
  readonly #clock: Clock;

  constructor(options: SqliteInboxOptions) {
    this.database = options.database;
    this.#table = checkTable(options.table ?? 'stratus_inbox');
    this.#clock = options.clock ?? systemClock;
    migrateSqlite(this.database, `inbox:${this.#table}`, [
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
        consumer TEXT NOT NULL,
        message_id TEXT NOT NULL,
        processed_at INTEGER NOT NULL,
        PRIMARY KEY (consumer, message_id)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS ${this.#table}_processed_at ON ${this.#table} (processed_at);`,
    ]);
  }

  /**
   * Runs `effect` in a transaction with the inbox record, unless `consumer` already processed `messageId`.
   * `effect` is synchronous (SQLite transactions are) and writes through the same database.
   */
  process<R>(
    consumer: string,
    messageId: string,
    effect: () => R,
  ): { duplicate: true } | { duplicate: false; result: R } {
    return this.database.transaction(() => {
      const inserted = this.database
        .prepare(`INSERT OR IGNORE INTO ${this.#table} (consumer, message_id, processed_at) VALUES (?, ?, ?)`)
        .run(consumer, messageId, this.#clock.now()).changes;
      if (inserted === 0) return { duplicate: true as const };
      return { duplicate: false as const, result: effect() };
    });
  }

  /** Forgets records older than `olderThanMs` (keep them longer than any redelivery can take). */
  prune(olderThanMs: number): number {
    return this.database
      .prepare(`DELETE FROM ${this.#table} WHERE processed_at < ?`)
      .run(this.#clock.now() - olderThanMs).changes;
  }
}

export interface PostgresInboxOptions {
  pool: Pool;
  table?: string;
  clock?: Clock;
}

export class PostgresInbox {
  readonly pool: Pool;
  readonly #table: string;
  readonly #clock: Clock;
  #ready: Promise<void> | undefined;

  constructor(options: PostgresInboxOptions) {
    this.pool = options.pool;
    this.#table = checkTable(options.table ?? 'stratus_inbox');
    this.#clock = options.clock ?? systemClock;
  }

  ensureSchema(): Promise<void> {
    this.#ready ??= migratePostgresTable(this.pool, this.#table, 'inbox', [
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         consumer text NOT NULL,
         message_id text NOT NULL,
         processed_at bigint NOT NULL,
         PRIMARY KEY (consumer, message_id)
       );
       CREATE INDEX IF NOT EXISTS ${this.#table.replace('.', '_')}_processed_at ON ${this.#table} (processed_at)`,
    ]).catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  /**
   * Runs `effect` with a client inside a transaction that also records the message, unless `consumer` already
   * processed `messageId`. Write the effect's changes through that client.
   */
  async process<R>(
    consumer: string,
    messageId: string,
    effect: (client: PoolClient) => Promise<R>,
  ): Promise<{ duplicate: true } | { duplicate: false; result: R }> {
    await this.ensureSchema();
    const client = await checkOut(this.pool);
    let broken = false;
    try {
      await client.query('BEGIN');
      const { rowCount } = await client.query(
        `INSERT INTO ${this.#table} (consumer, message_id, processed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [consumer, messageId, this.#clock.now()],
      );
      if (rowCount === 0) {
        await client.query('ROLLBACK');
        return { duplicate: true };
      }
      const result = await effect(client);
      await client.query('COMMIT');
      return { duplicate: false, result };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async prune(olderThanMs: number): Promise<number> {
    await this.ensureSchema();
    const { rowCount } = await this.pool.query(`DELETE FROM ${this.#table} WHERE processed_at < $1`, [
      this.#clock.now() - olderThanMs,
    ]);
    return rowCount ?? 0;
  }
}

/**
 * A consumer handler whose effect runs exactly once per message id under `consumer` (a name for this
 * handler: two different handlers of one message each get their own record).
 */
export function sqliteInboxHandler<T>(
  inbox: SqliteInbox,
  consumer: string,
  effect: (message: ReceivedMessage<T>, context: HandlerContext) => void,
): MessageHandler<T> {
  return (message, context) => {
    inbox.process(consumer, message.id, () => effect(message, context));
  };
}

export function postgresInboxHandler<T>(
  inbox: PostgresInbox,
  consumer: string,
  effect: (client: PoolClient, message: ReceivedMessage<T>, context: HandlerContext) => Promise<void>,
): MessageHandler<T> {
  return async (message, context) => {
    await inbox.process(consumer, message.id, (client) => effect(client, message, context));
  };
}
