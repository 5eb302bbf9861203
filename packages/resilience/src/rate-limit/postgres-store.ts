import { createHash } from 'node:crypto';
import {
  assertDuration,
  assertObject,
  type Clock,
  type EventEmitter,
  InvalidOptionsError,
  randomId,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import { migratePostgresTable, postgresTypes } from '@stratus/sql';
import type { Pool } from 'pg';
import {
  type Algorithm,
  assertCost,
  type BindOptions,
  type PostgresProgram,
  type RateLimitStore,
  type SqlTerms,
} from './algorithm.js';
import { LimiterObserver } from './observer.js';
import type { Lease, RateLimiter, RateLimiterEvent, RateLimitResult } from './types.js';

/** The part of a pg Pool (or Client) the store uses. */
export type PostgresQueryable = Pick<Pool, 'query'>;

export interface PostgresRateLimitStoreOptions {
  /** A pg Pool you own: the store never ends it. */
  pool: PostgresQueryable;
  /**
   * Tables are `<tablePrefix>_<algorithm>` (e.g. stratus_rate_limit_token_bucket), created on first use.
   * May be schema-qualified ('limits.rl'). Default 'stratus_rate_limit'.
   */
  tablePrefix?: string;
  /**
   * Whose clock decides windows and refills. 'server' (default): PostgreSQL's statement_timestamp(), so
   * every process sees one clock and skew between application hosts does not matter. A Clock: the caller's
   * `now()` (tests on a virtual clock; see RedisRateLimitStoreOptions.time for what skew then does).
   */
  time?: 'server' | Clock;
  /**
   * How often rows idle long enough to be as good as new are deleted (on the `time` clock when one is given;
   * the timer does not keep the process alive; `close()` stops it). 0 disables it, leaving
   * `purgeExpired()` to you. Default 60 000.
   */
  purgeIntervalMs?: number;
}

const serverNow = '(extract(epoch FROM statement_timestamp()) * 1000)::float8';
const identifier = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/**
 * Counters in PostgreSQL, shared by every process using the same tables and limiter name. Each request is
 * one statement (an INSERT ... ON CONFLICT DO UPDATE ... RETURNING, prepared once per connection), atomic
 * under the row lock it takes.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  readonly kind = 'postgres';
  readonly pool: PostgresQueryable;
  readonly tablePrefix: string;
  readonly #clock: Clock | undefined;
  readonly #purgeIntervalMs: number;
  readonly #tables = new Map<string, Promise<void>>();
  readonly #timers: Clock;
  #purgeTimer: TimerHandle | undefined;
  #closed = false;

  constructor(options: PostgresRateLimitStoreOptions) {
    assertObject('options', options as unknown);
    const { pool, tablePrefix = 'stratus_rate_limit', time = 'server', purgeIntervalMs = 60_000 } = options;
    if (typeof (pool as { query?: unknown })?.query !== 'function') {
      throw new InvalidOptionsError('pool', 'expected a pg Pool');
    }
    if (typeof tablePrefix !== 'string' || !identifier.test(tablePrefix)) {
      throw new InvalidOptionsError(
        'tablePrefix',
        'expected a lower-case SQL identifier, optionally schema.name',
      );
    }
    if (time !== 'server') assertObject('time', time);
    assertDuration('purgeIntervalMs', purgeIntervalMs);
    this.pool = pool;
    this.tablePrefix = tablePrefix;
    this.#clock = time === 'server' ? undefined : time;
    this.#purgeIntervalMs = purgeIntervalMs;
    this.#timers = this.#clock ?? systemClock;
  }

  bind(algorithm: Algorithm<unknown>, options: BindOptions): RateLimiter {
    return new PostgresRateLimiter(this, algorithm, options);
  }

  /** The caller's time when the store runs on a Clock; undefined when the server's clock is used. */
  get clock(): Clock | undefined {
    return this.#clock;
  }

  tableOf(program: PostgresProgram): string {
    return `${this.tablePrefix}_${program.table}`;
  }

  /** Creates the program's table if missing (once per store and table). */
  ensureTable(program: PostgresProgram): Promise<void> {
    const table = this.tableOf(program);
    let ready = this.#tables.get(table);
    if (ready === undefined) {
      ready = this.#createTable(table, program);
      this.#tables.set(table, ready);
      ready.then(
        () => {
          if (this.#purgeTimer === undefined) this.#schedulePurge();
        },
        () => this.#tables.delete(table),
      );
    }
    return ready;
  }

  /** Deletes the rows of every table this store uses whose state is as good as new; returns how many. */
  async purgeExpired(): Promise<number> {
    const now = this.#clock === undefined ? serverNow : '$1::float8';
    const values = this.#clock === undefined ? [] : [this.#clock.now()];
    let deleted = 0;
    for (const table of this.#tables.keys()) {
      const result = await this.pool.query(`DELETE FROM ${table} WHERE expires_at <= ${now}`, values);
      deleted += result.rowCount ?? 0;
    }
    return deleted;
  }

  /** Stops the purge timer. The pool stays yours to end. */
  close(): void {
    this.#closed = true;
    if (this.#purgeTimer !== undefined) this.#timers.clearTimeout(this.#purgeTimer);
    this.#purgeTimer = undefined;
  }

  #createTable(table: string, program: PostgresProgram): Promise<void> {
    const columns = program.columns.map(([name, type]) => `${name} ${type} NOT NULL`).join(', ');
    const ddl = `CREATE TABLE IF NOT EXISTS ${table} (key text PRIMARY KEY, ${columns}, ok boolean NOT NULL, expires_at float8 NOT NULL) WITH (fillfactor = 80)`;
    return migratePostgresTable(this.pool, table, 'rate-limit', [ddl]);
  }

  /** The next background purge, counted from the end of the previous one so purges never overlap. */
  #schedulePurge(): void {
    if (this.#closed || this.#purgeIntervalMs === 0) return;
    this.#purgeTimer = this.#timers.setTimeout(
      () => {
        this.purgeExpired().then(
          () => this.#schedulePurge(),
          (error: unknown) => {
            // Nothing waits on a background purge; the next round retries it.
            process.emitWarning(`Stratus rate-limit purge failed: ${String(error)}`, 'StratusPurgeWarning');
            this.#schedulePurge();
          },
        );
      },
      this.#purgeIntervalMs,
      { unref: true },
    );
  }
}

interface Statement {
  readonly name: string;
  readonly text: string;
}

/** Names a prepared statement after its text, so a changed text never reuses a stale preparation. */
function statement(text: string): Statement {
  return { name: `stratus_rl_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`, text };
}

/** The acquire statement of `program` on `table` (see PostgresProgram) and the order of its parameters. */
function acquireStatement(
  program: PostgresProgram,
  table: string,
  clientTime: boolean,
  leased: boolean,
  paramCount: number,
): Statement {
  let position = 1;
  const next = (type: string) => `$${++position}::${type}`;
  const now = clientTime ? next('float8') : serverNow;
  const cost = next('float8');
  const lease = leased ? next('text') : 'NULL::text';
  const params = Array.from({ length: paramCount }, () => next('float8'));
  const terms: SqlTerms = { now, cost, lease, param: (index) => params[index] as string };
  const names = program.columns.map(([name]) => name);
  const stateColumns = names.join(', ');
  const newState = names.map((name) => `s.${name}`).join(', ');
  const nullRow = program.columns.map(([name, type]) => `NULL::${type} AS ${name}`).join(', ');
  const storedRow = names.map((name) => `t.${name}`).join(', ');
  const transition = program.transition(terms);
  const returning = program.returning(terms).map((expression, i) => `(${expression})::float8 AS v${i}`);
  return statement(`INSERT INTO ${table} AS t (key, ${stateColumns}, ok, expires_at)
  SELECT $1::text, ${newState}, s.ok, s.expires_at FROM (SELECT ${nullRow}) prev ${transition}
  ON CONFLICT (key) DO UPDATE SET (${stateColumns}, ok, expires_at) =
    (SELECT ${newState}, s.ok, s.expires_at FROM (SELECT ${storedRow}) prev ${transition})
  RETURNING t.ok, ${now} AS now, ${returning.join(', ')}`);
}

class PostgresRateLimiter implements RateLimiter {
  readonly store = 'postgres';
  readonly name: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number | undefined;
  readonly leased: boolean;
  readonly #owner: PostgresRateLimitStore;
  readonly #algorithm: Algorithm<unknown>;
  readonly #program: PostgresProgram;
  readonly #observer: LimiterObserver;
  readonly #keyPrefix: string;
  readonly #acquire: Statement;
  readonly #release: Statement | undefined;
  readonly #reset: Statement;
  #ready = false;

  constructor(owner: PostgresRateLimitStore, algorithm: Algorithm<unknown>, options: BindOptions) {
    this.#owner = owner;
    this.#algorithm = algorithm;
    this.#program = algorithm.postgres;
    this.algorithm = algorithm.kind;
    this.limit = algorithm.limit;
    this.windowMs = algorithm.windowMs;
    this.leased = algorithm.leased;
    this.name = options.name;
    this.#observer = new LimiterObserver(options.name, options.clock, options.softLimit);
    this.#keyPrefix = `${options.name}:`;
    const table = owner.tableOf(this.#program);
    this.#acquire = acquireStatement(
      this.#program,
      table,
      owner.clock !== undefined,
      algorithm.leased,
      algorithm.params.length,
    );
    this.#release = this.#program.release === undefined ? undefined : statement(this.#program.release(table));
    this.#reset = statement(`DELETE FROM ${table} WHERE key = $1`);
  }

  get events(): EventEmitter<RateLimiterEvent> {
    return this.#observer.events;
  }

  async acquire(key: string, cost = 1): Promise<RateLimitResult> {
    if (cost !== 1) assertCost(cost);
    if (!this.#ready) await this.#setUp();
    const storeKey = this.#keyPrefix + key;
    const values: (string | number)[] = [storeKey];
    const { clock } = this.#owner;
    if (clock !== undefined) values.push(clock.now());
    values.push(cost);
    const leaseId = this.#algorithm.leased ? randomId() : '';
    if (this.#algorithm.leased) values.push(leaseId);
    for (const param of this.#algorithm.params) values.push(param);
    const { rows } = await this.#owner.pool.query<unknown[]>({
      ...this.#acquire,
      values,
      rowMode: 'array',
      types: postgresTypes,
    });
    const row = rows[0] as unknown[];
    const numbers: number[] = new Array(row.length);
    numbers[0] = row[0] === true ? 1 : 0;
    for (let i = 1; i < row.length; i++) numbers[i] = row[i] as number;
    const lease =
      this.#release === undefined
        ? undefined
        : new PostgresLease(this.#owner, this.#release, storeKey, leaseId, cost);
    const result = this.#algorithm.decode(numbers, cost, lease);
    this.#observer.observe(key, cost, result);
    return result;
  }

  async reset(key: string): Promise<void> {
    if (!this.#ready) await this.#setUp();
    await this.#owner.pool.query({ ...this.#reset, values: [this.#keyPrefix + key] });
    this.#observer.forget(key);
  }

  async #setUp(): Promise<void> {
    await this.#owner.ensureTable(this.#program);
    this.#ready = true;
  }
}

class PostgresLease implements Lease {
  #released: Promise<void> | undefined;

  constructor(
    readonly owner: PostgresRateLimitStore,
    readonly statement: Statement,
    readonly storeKey: string,
    readonly id: string,
    readonly cost: number,
  ) {}

  release(): Promise<void> {
    this.#released ??= this.owner.pool
      .query({ ...this.statement, values: [this.storeKey, this.id] })
      .then(() => undefined);
    return this.#released;
  }
}
