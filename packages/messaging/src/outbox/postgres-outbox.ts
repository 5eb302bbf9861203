import { type Clock, systemClock } from '@stratus/core';
import { migratePostgresTable, NotificationListener, postgresTypes } from '@stratus/sql';
import type { Pool } from 'pg';
import { type Codec, defaultCodec } from '../codec.js';
import type { MessageToSend } from '../outgoing.js';
import {
  assertDestination,
  type DeadOutboxRecord,
  destinationOf,
  type OutboxDestination,
  type OutboxRecord,
  type OutboxStore,
  outboxMessage,
  outboxProperties,
  prepareOutboxMessages,
} from './outbox.js';

/** Anything that runs a query: a pg Pool, a Client or a PoolClient inside the caller's transaction. */
export type PostgresQueryable = Pick<Pool, 'query'>;

export interface PostgresOutboxOptions {
  /** A pool you own, used by the relay side (reading, deleting, leases, LISTEN). */
  pool: Pool;
  /** Table name, optionally schema-qualified; default 'stratus_outbox'. */
  table?: string;
  codec?: Codec;
  clock?: Clock;
}

interface Row {
  sequence: string;
  kind: string;
  destination: string;
  properties: string;
  body: Buffer;
  created_at: string;
}

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,40}(\.[a-z_][a-z0-9_]{0,40})?$/;

/**
 * The transactional outbox in PostgreSQL. `add(client, ...)` writes with the client of the caller's open
 * transaction; a NOTIFY in the same transaction wakes the relays when (and only if) it commits.
 */
export class PostgresOutbox implements OutboxStore {
  readonly kind = 'postgres';
  readonly pool: Pool;
  readonly #table: string;
  readonly #channel: string;
  readonly #codec: Codec;
  readonly #clock: Clock;
  #ready: Promise<void> | undefined;

  constructor(options: PostgresOutboxOptions) {
    const table = options.table ?? 'stratus_outbox';
    if (!TABLE_NAME.test(table)) throw new Error(`invalid outbox table name ${JSON.stringify(table)}`);
    this.pool = options.pool;
    this.#table = table;
    this.#channel = table.replace('.', '_');
    this.#codec = options.codec ?? defaultCodec;
    this.#clock = options.clock ?? systemClock;
  }

  /** Creates the tables (idempotent, safe when several processes start at once). */
  ensureSchema(): Promise<void> {
    this.#ready ??= migratePostgresTable(this.pool, this.#table, 'outbox', [
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         sequence bigserial PRIMARY KEY,
         kind text NOT NULL,
         destination text NOT NULL,
         properties text NOT NULL,
         body bytea NOT NULL,
         created_at bigint NOT NULL
       );
       CREATE TABLE IF NOT EXISTS ${this.#table}_dead (
         sequence bigint PRIMARY KEY,
         kind text NOT NULL,
         destination text NOT NULL,
         properties text NOT NULL,
         body bytea NOT NULL,
         created_at bigint NOT NULL,
         failed_at bigint NOT NULL,
         error text NOT NULL
       );
       CREATE TABLE IF NOT EXISTS ${this.#table}_lease (
         name text PRIMARY KEY,
         owner text NOT NULL,
         expires_at bigint NOT NULL
       );`,
    ]).catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  /** Writes messages for `destination` with `client` (use the client of your open transaction). */
  async add<T>(
    client: PostgresQueryable,
    destination: OutboxDestination,
    messages: MessageToSend<T> | readonly MessageToSend<T>[],
  ): Promise<void> {
    assertDestination(destination);
    await this.ensureSchema();
    const now = this.#clock.now();
    const prepared = prepareOutboxMessages(messages, { codec: this.#codec, now });
    if (prepared.length === 0) return;
    const [kind, name] = 'queue' in destination ? ['queue', destination.queue] : ['topic', destination.topic];
    await client.query(
      `WITH added AS (
         INSERT INTO ${this.#table} (kind, destination, properties, body, created_at)
         SELECT $1, $2, p, b, $5 FROM unnest($3::text[], $4::bytea[]) WITH ORDINALITY AS t(p, b, n) ORDER BY n
         RETURNING 1
       ) SELECT pg_notify($6, '') FROM (SELECT 1 FROM added LIMIT 1) AS one`,
      [
        kind,
        name,
        prepared.map(outboxProperties),
        prepared.map((message) =>
          Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength),
        ),
        now,
        this.#channel,
      ],
    );
  }

  async read(limit: number): Promise<OutboxRecord[]> {
    await this.ensureSchema();
    const { rows } = await this.pool.query<Row>({
      text: `SELECT * FROM ${this.#table} ORDER BY sequence LIMIT $1`,
      values: [limit],
      types: postgresTypes,
    });
    return rows.map(toRecord);
  }

  async remove(sequences: readonly number[]): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.#table} WHERE sequence = ANY($1::bigint[])`, [sequences]);
  }

  async bury(record: OutboxRecord, error: string, now: number): Promise<void> {
    await this.pool.query(
      `WITH moved AS (DELETE FROM ${this.#table} WHERE sequence = $1 RETURNING *)
       INSERT INTO ${this.#table}_dead SELECT sequence, kind, destination, properties, body, created_at, $2, $3 FROM moved
       ON CONFLICT (sequence) DO NOTHING`,
      [record.sequence, now, error],
    );
  }

  async listDead(limit: number): Promise<DeadOutboxRecord[]> {
    await this.ensureSchema();
    const { rows } = await this.pool.query<Row & { failed_at: string; error: string }>({
      text: `SELECT * FROM ${this.#table}_dead ORDER BY sequence LIMIT $1`,
      values: [limit],
      types: postgresTypes,
    });
    return rows.map((row) => ({ ...toRecord(row), failedAt: Number(row.failed_at), error: row.error }));
  }

  async requeueDead(sequences: readonly number[]): Promise<number> {
    const { rowCount } = await this.pool.query(
      `WITH moved AS (DELETE FROM ${this.#table}_dead WHERE sequence = ANY($1::bigint[]) RETURNING *),
       requeued AS (
         INSERT INTO ${this.#table} SELECT sequence, kind, destination, properties, body, created_at FROM moved
         RETURNING 1
       )
       SELECT pg_notify($2, '') FROM requeued`,
      [sequences, this.#channel],
    );
    return rowCount ?? 0;
  }

  async acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    await this.ensureSchema();
    const { rowCount } = await this.pool.query(
      `INSERT INTO ${this.#table}_lease (name, owner, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE ${this.#table}_lease.owner = excluded.owner OR ${this.#table}_lease.expires_at <= $4`,
      [name, owner, now + ttlMs, now],
    );
    return (rowCount ?? 0) > 0;
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.#table}_lease WHERE name = $1 AND owner = $2`, [name, owner]);
  }

  async pending(now: number): Promise<{ count: number; oldestAgeMs: number }> {
    await this.ensureSchema();
    const { rows } = await this.pool.query<{ count: string; oldest: string | null }>({
      text: `SELECT count(*) AS count, min(created_at) AS oldest FROM ${this.#table}`,
      types: postgresTypes,
    });
    const row = rows[0];
    return {
      count: Number(row?.count ?? 0),
      oldestAgeMs: row?.oldest == null ? 0 : Math.max(0, now - Number(row.oldest)),
    };
  }

  /**
   * LISTENs on a connection of its own (NotificationListener: re-established when it drops), ended when the watch
   * stops. `listener` is also called each time LISTEN takes effect: what was committed meanwhile woke nobody.
   */
  watch(listener: () => void): () => void {
    const listening = new NotificationListener(() => this.pool.connect(), this.#channel);
    const unwatch = listening.watchAll(() => listener());
    return () => {
      unwatch();
      void listening.close();
    };
  }
}

function toRecord(row: Row): OutboxRecord {
  return {
    sequence: Number(row.sequence),
    destination: destinationOf(row.kind, row.destination),
    message: outboxMessage(
      row.properties,
      new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength),
    ),
    createdAt: Number(row.created_at),
  };
}
