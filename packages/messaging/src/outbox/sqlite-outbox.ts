import { type Clock, systemClock } from '@stratus/core';
import { migrateSqlite, SQLITE_LIMIT, type SqliteDatabase } from '@stratus/sql';
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

export interface SqliteOutboxOptions {
  /** The application's database: outbox rows are written in its transactions. */
  database: SqliteDatabase;
  /** Table name prefix; default 'stratus_outbox' (tables <prefix>, <prefix>_dead, <prefix>_lease). */
  table?: string;
  codec?: Codec;
  clock?: Clock;
}

interface Row {
  sequence: number;
  kind: string;
  destination: string;
  properties: string;
  body: Uint8Array;
  created_at: number;
}

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** In-process wake-ups by database file: a commit that added records wakes the relays of this process at once. */
const listenersByFile = new Map<string, Set<() => void>>();

/**
 * The transactional outbox in SQLite. Call `add` inside the transaction that makes the business change
 * (`database.transaction(() => { ...; outbox.add(...) })`): the messages exist exactly when the change does.
 * An `OutboxRelay` then sends them.
 */
export class SqliteOutbox implements OutboxStore {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;
  readonly #table: string;
  readonly #codec: Codec;
  readonly #clock: Clock;
  readonly #file: string;

  constructor(options: SqliteOutboxOptions) {
    const table = options.table ?? 'stratus_outbox';
    if (!TABLE_NAME.test(table)) throw new Error(`invalid outbox table name ${JSON.stringify(table)}`);
    this.database = options.database;
    this.#table = table;
    this.#codec = options.codec ?? defaultCodec;
    this.#clock = options.clock ?? systemClock;
    this.#file = options.database.path === ':memory:' ? `:memory:${Math.random()}` : options.database.path;
    migrateSqlite(this.database, `outbox:${table}`, [
      `CREATE TABLE IF NOT EXISTS ${table} (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        destination TEXT NOT NULL,
        properties TEXT NOT NULL,
        body BLOB NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ${table}_dead (
        sequence INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        destination TEXT NOT NULL,
        properties TEXT NOT NULL,
        body BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        failed_at INTEGER NOT NULL,
        error TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ${table}_lease (
        name TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );`,
    ]);
  }

  /**
   * Writes messages for `destination` in the current transaction (or in one of their own outside any). Validates
   * and encodes them now, so a bad message fails the business transaction instead of the relay.
   */
  add<T>(destination: OutboxDestination, messages: MessageToSend<T> | readonly MessageToSend<T>[]): void {
    assertDestination(destination);
    const now = this.#clock.now();
    const prepared = prepareOutboxMessages(messages, { codec: this.#codec, now });
    const [kind, name] = 'queue' in destination ? ['queue', destination.queue] : ['topic', destination.topic];
    const insert = this.database.prepare(
      `INSERT INTO ${this.#table} (kind, destination, properties, body, created_at) VALUES (?, ?, ?, ?, ?)`,
    );
    this.database.transaction(() => {
      for (const message of prepared) insert.run(kind, name, outboxProperties(message), message.body, now);
    });
    this.database.afterCommit(() => {
      for (const listener of listenersByFile.get(this.#file) ?? []) listener();
    });
  }

  async read(limit: number): Promise<OutboxRecord[]> {
    const rows = this.database
      .prepare(`SELECT * FROM ${this.#table} ORDER BY sequence ${SQLITE_LIMIT}`)
      .all<Row>(limit);
    return rows.map(toRecord);
  }

  async remove(sequences: readonly number[]): Promise<void> {
    const remove = this.database.prepare(`DELETE FROM ${this.#table} WHERE sequence = ?`);
    this.database.transaction(() => {
      for (const sequence of sequences) remove.run(sequence);
    });
  }

  async bury(record: OutboxRecord, error: string, now: number): Promise<void> {
    this.database.transaction(() => {
      this.database
        .prepare(
          `INSERT OR REPLACE INTO ${this.#table}_dead SELECT sequence, kind, destination, properties, body, created_at, ?, ? FROM ${this.#table} WHERE sequence = ?`,
        )
        .run(now, error, record.sequence);
      this.database.prepare(`DELETE FROM ${this.#table} WHERE sequence = ?`).run(record.sequence);
    });
  }

  async listDead(limit: number): Promise<DeadOutboxRecord[]> {
    const rows = this.database
      .prepare(`SELECT * FROM ${this.#table}_dead ORDER BY sequence ${SQLITE_LIMIT}`)
      .all<Row & { failed_at: number; error: string }>(limit);
    return rows.map((row) => ({ ...toRecord(row), failedAt: row.failed_at, error: row.error }));
  }

  async requeueDead(sequences: readonly number[]): Promise<number> {
    let requeued = 0;
    this.database.transaction(() => {
      for (const sequence of sequences) {
        requeued += this.database
          .prepare(
            `INSERT INTO ${this.#table} SELECT sequence, kind, destination, properties, body, created_at FROM ${this.#table}_dead WHERE sequence = ?`,
          )
          .run(sequence).changes;
        this.database.prepare(`DELETE FROM ${this.#table}_dead WHERE sequence = ?`).run(sequence);
      }
    });
    if (requeued > 0) for (const listener of listenersByFile.get(this.#file) ?? []) listener();
    return requeued;
  }

  async acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const result = this.database
      .prepare(
        `INSERT INTO ${this.#table}_lease (name, owner, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
         WHERE ${this.#table}_lease.owner = excluded.owner OR ${this.#table}_lease.expires_at <= ?`,
      )
      .run(name, owner, now + ttlMs, now);
    return result.changes > 0;
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    this.database.prepare(`DELETE FROM ${this.#table}_lease WHERE name = ? AND owner = ?`).run(name, owner);
  }

  async pending(now: number): Promise<{ count: number; oldestAgeMs: number }> {
    const row = this.database
      .prepare(`SELECT count(*) AS count, min(created_at) AS oldest FROM ${this.#table}`)
      .get<{ count: number; oldest: number | null }>();
    return { count: row?.count ?? 0, oldestAgeMs: row?.oldest == null ? 0 : Math.max(0, now - row.oldest) };
  }

  watch(listener: () => void): () => void {
    let listeners = listenersByFile.get(this.#file);
    if (listeners === undefined) {
      listeners = new Set();
      listenersByFile.set(this.#file, listeners);
    }
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      listeners.delete(entry);
      if (listeners.size === 0) listenersByFile.delete(this.#file);
    };
  }
}

function toRecord(row: Row): OutboxRecord {
  return {
    sequence: row.sequence,
    destination: destinationOf(row.kind, row.destination),
    message: outboxMessage(row.properties, row.body),
    createdAt: row.created_at,
  };
}
