import { InvalidOptionsError } from '@stratus/core';
import { migratePostgresTable, postgresTypes } from '@stratus/sql';
import type { Notification, Pool, PoolClient } from 'pg';
import { KeyedListeners } from './keyed-listeners.js';
import {
  type CircuitStateStore,
  type CompareAndSetResult,
  parseCircuitRecord,
  type QuorumReport,
  type SharedCircuitRecord,
  type SharedCircuitState,
} from './state-store.js';

export interface PostgresCircuitStateStoreOptions {
  /** Your pg Pool; the store never ends it. LISTEN holds one of its connections while someone subscribes. */
  pool: Pool;
  /**
   * Table of circuit states, optionally schema-qualified; default "stratus_circuit_breakers". Quorum reports
   * go in "<table>_quorum". Both are created if missing.
   */
  table?: string;
  /** NOTIFY channel for changes; default "stratus_circuit_changes". */
  channel?: string;
}

interface Listening {
  readonly client: PoolClient;
  /** Removes our listeners from the client. */
  readonly detach: () => void;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/;
const RELISTEN_DELAY_MS = 1000;

function quoteName(option: string, name: string): string {
  const parts = name.split('.');
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new InvalidOptionsError(
      option,
      `expected [schema.]name made of letters, digits and _, got "${name}"`,
    );
  }
  return parts.map((p) => `"${p}"`).join('.');
}

/**
 * Shared circuit state on PostgreSQL: a row per circuit updated with a version check (compare-and-set),
 * quorum reports in a second table, and NOTIFY on every write for prompt propagation to LISTENers.
 */
export class PostgresCircuitStateStore implements CircuitStateStore {
  readonly kind = 'postgres';
  readonly #pool: Pool;
  readonly #table: string;
  readonly #quorumTable: string;
  readonly #channel: string;
  #ready: Promise<void> | undefined;
  readonly #listeners = new KeyedListeners();
  #listening: Promise<Listening> | undefined;

  constructor(options: PostgresCircuitStateStoreOptions) {
    this.#pool = options.pool;
    const table = options.table ?? 'stratus_circuit_breakers';
    this.#table = quoteName('table', table);
    this.#quorumTable = quoteName('table', `${table}_quorum`);
    this.#channel = options.channel ?? 'stratus_circuit_changes';
    quoteName('channel', this.#channel);
  }

  async read(key: string): Promise<SharedCircuitRecord | undefined> {
    await this.#ensureTables();
    const { rows } = await this.#pool.query<{ version: string; state: object }>({
      text: `SELECT version, state FROM ${this.#table} WHERE key = $1`,
      values: [key],
      types: postgresTypes,
    });
    const row = rows[0];
    return row ? parseCircuitRecord(row.version, row.state) : undefined;
  }

  async compareAndSet(
    key: string,
    expectedVersion: number,
    state: SharedCircuitState,
  ): Promise<CompareAndSetResult> {
    await this.#ensureTables();
    const json = JSON.stringify(state);
    // The notification is sent by the same statement, so it goes out exactly when the write commits.
    const write =
      expectedVersion === 0
        ? `INSERT INTO ${this.#table} (key, version, state) VALUES ($1, 1, $2::jsonb)
           ON CONFLICT (key) DO NOTHING RETURNING version`
        : `UPDATE ${this.#table} SET version = version + 1, state = $2::jsonb, updated_at = now()
           WHERE key = $1 AND version = $4 RETURNING version`;
    const { rows } = await this.#pool.query<{ version: string }>({
      text: `WITH w AS (${write})
       SELECT w.version, pg_notify($3, json_build_object('key', $1::text, 'version', w.version, 'state', $2::jsonb)::text)
       FROM w`,
      values:
        expectedVersion === 0 ? [key, json, this.#channel] : [key, json, this.#channel, expectedVersion],
      types: postgresTypes,
    });
    const row = rows[0];
    if (row) return { written: true, record: parseCircuitRecord(row.version, state) };
    return { written: false, record: await this.read(key) };
  }

  async report(key: string, report: QuorumReport, now: number): Promise<readonly QuorumReport[]> {
    await this.#ensureTables();
    // All parts of one statement see the same snapshot: other instances' live rows come from the table,
    // this instance's from the upsert.
    const { rows } = await this.#pool.query<{ report: QuorumReport }>({
      text: `WITH up AS (
         INSERT INTO ${this.#quorumTable} (key, instance_id, report, expires_at) VALUES ($1, $2, $3::jsonb, $4)
         ON CONFLICT (key, instance_id) DO UPDATE SET report = EXCLUDED.report, expires_at = EXCLUDED.expires_at
         RETURNING report, expires_at
       ), expired AS (
         DELETE FROM ${this.#quorumTable} WHERE key = $1 AND instance_id <> $2 AND expires_at <= $5
       )
       SELECT report FROM ${this.#quorumTable} WHERE key = $1 AND instance_id <> $2 AND expires_at > $5
       UNION ALL SELECT report FROM up WHERE expires_at > $5`,
      values: [key, report.instanceId, JSON.stringify(report), report.expiresAt, now],
      types: postgresTypes,
    });
    return rows.map((r) => r.report);
  }

  async subscribe(
    key: string,
    listener: (record: SharedCircuitRecord) => void,
  ): Promise<() => Promise<void>> {
    const remove = this.#listeners.add(key, listener);
    try {
      await this.#listen();
    } catch (error) {
      remove();
      throw error;
    }
    return async () => {
      if (remove() && this.#listeners.keyCount === 0) await this.#unlisten();
    };
  }

  #ensureTables(): Promise<void> {
    this.#ready ??= this.#createTables().catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  #createTables(): Promise<void> {
    const statements = [
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         key text PRIMARY KEY,
         version bigint NOT NULL,
         state jsonb NOT NULL,
         updated_at timestamptz NOT NULL DEFAULT now())`,
      `CREATE TABLE IF NOT EXISTS ${this.#quorumTable} (
         key text NOT NULL,
         instance_id text NOT NULL,
         report jsonb NOT NULL,
         expires_at bigint NOT NULL,
         PRIMARY KEY (key, instance_id))`,
    ];
    return migratePostgresTable(this.#pool, this.#table, 'circuit-breaker', [statements.join(';\n')]);
  }

  /** One pooled connection LISTENs for every subscribed key; it is re-established if it breaks. */
  #listen(): Promise<Listening> {
    if (this.#listening) return this.#listening;
    const listening: Promise<Listening> = (async () => {
      const client = await this.#pool.connect();
      const onNotification = (message: Notification) => this.#dispatch(message);
      const onError = () => {
        detach();
        client.release(true);
        if (this.#listening !== listening) return;
        this.#listening = undefined;
        // Polling covers the gap; listen again shortly while anyone still subscribes.
        setTimeout(() => {
          if (this.#listeners.keyCount > 0) this.#listen().catch(() => {});
        }, RELISTEN_DELAY_MS).unref();
      };
      const detach = () => {
        client.off('notification', onNotification);
        client.off('error', onError);
      };
      client.on('notification', onNotification);
      client.on('error', onError);
      try {
        await client.query(`LISTEN "${this.#channel}"`);
      } catch (error) {
        detach();
        client.release(true);
        throw error;
      }
      return { client, detach };
    })();
    this.#listening = listening;
    listening.catch(() => {
      if (this.#listening === listening) this.#listening = undefined;
    });
    return listening;
  }

  async #unlisten(): Promise<void> {
    const listening = this.#listening;
    this.#listening = undefined;
    const active = await listening?.catch(() => undefined);
    if (!active) return;
    try {
      await active.client.query(`UNLISTEN "${this.#channel}"`);
      active.detach();
      active.client.release();
    } catch (error) {
      active.detach();
      active.client.release(error instanceof Error ? error : true);
    }
  }

  #dispatch(message: Notification): void {
    if (message.channel !== this.#channel || !message.payload) return;
    let key: string;
    let record: SharedCircuitRecord;
    try {
      const payload = JSON.parse(message.payload) as { key: string; version: string; state: object };
      key = payload.key;
      record = parseCircuitRecord(payload.version, payload.state);
    } catch {
      return; // not ours: someone else notified on the channel
    }
    for (const listener of this.#listeners.of(key)) listener(record);
  }
}
