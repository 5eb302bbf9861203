/**
 * One small synchronous SQLite interface over two drivers: Node's built-in `node:sqlite` (`DatabaseSync`, Node
 * 22.5+, no native addon) and `better-sqlite3` (an optional peer dependency, for Node 20). Everything Stratus
 * keeps in SQLite (message queues, the transactional outbox, the inbox) goes through it, so both drivers must
 * behave the same here:
 * - parameters are positional (`?`) only, and values are `null | number | bigint | string | Uint8Array`
 *   (no `undefined`, no booleans: the drivers disagree on those);
 * - integers come back as numbers, BLOBs as plain `Uint8Array` (better-sqlite3's Buffers are re-viewed, not
 *   copied), rows as records whose prototype may be null;
 * - `transaction(fn)` is `BEGIN IMMEDIATE` ... `COMMIT`, so a writer takes the database's write lock before
 *   reading what it will change, and several processes sharing one file never deadlock on a lock upgrade.
 */
import { createRequire } from 'node:module';
import { assertInteger, assertObject, assertOneOf, InvalidOptionsError, StratusError } from '@stratus/core';
import type BetterSqlite3 from 'better-sqlite3';
import { BackgroundCheckpointer, type CheckpointerOptions } from './checkpointer.js';

export type { CheckpointerOptions } from './checkpointer.js';

export type SqliteValue = null | number | bigint | string | Uint8Array;
export type SqliteRow = Record<string, SqliteValue>;

export interface SqliteRunResult {
  /** Rows inserted, updated or deleted by the statement. */
  readonly changes: number;
  readonly lastInsertRowid: number;
}

/** A prepared statement; `get` and `all` need a statement that returns rows (a SELECT or `... RETURNING`). */
export interface SqliteStatement {
  run(...params: SqliteValue[]): SqliteRunResult;
  get<T = SqliteRow>(...params: SqliteValue[]): T | undefined;
  all<T = SqliteRow>(...params: SqliteValue[]): T[];
}

export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';

export interface SqliteDatabase {
  readonly driver: SqliteDriverName;
  /** The path the database was opened with (':memory:' for an in-memory one). */
  readonly path: string;
  /**
   * The driver's own handle, for what this interface does not cover. On a database from openSqlite, SQLite's busy
   * timeout may read 0 on it after `transactionAsync` (see BaseSqlite.#busyTimeoutLowered): run statements that
   * may wait for a lock through `prepare` or `exec`, which set it back first.
   */
  readonly handle: unknown;
  /** Runs one or more statements without parameters (DDL, pragmas). */
  exec(sql: string): void;
  /** A prepared statement, cached by its SQL text for the life of the database. */
  prepare(sql: string): SqliteStatement;
  /**
   * Runs `fn` in a write transaction (`BEGIN IMMEDIATE`), commits when it returns and rolls back when it throws.
   * Inside a transaction already open on this connection (ours or one the user began) it runs in a savepoint
   * instead: it joins the outer transaction, and its own error undoes only its own writes. `fn` must be
   * synchronous: a returned promise is refused (the transaction would commit before the awaited work).
   */
  transaction<T>(fn: () => T): T;
  /**
   * Like `transaction`, but waits for another connection's write lock without blocking the event loop: it tries
   * `BEGIN IMMEDIATE` without SQLite's busy wait (which sleeps the whole thread, in growing steps) and retries at
   * each turn of the event loop for 2 ms, then every millisecond, up to `busyTimeoutMs`, then rejects with the
   * driver's SQLITE_BUSY error. Polling often also keeps a busy writer in another process from starving this one.
   * Inside an open transaction it joins it. With `groupCommit` it waits for the end of the event loop's turn
   * instead (see OpenSqliteOptions), unless `immediate`: then it commits alone, at once when the lock is free.
   */
  transactionAsync<T>(fn: () => T, options?: TransactionAsyncOptions): Promise<T>;
  /** How long a write waits for another connection's lock (the connection's `PRAGMA busy_timeout`). */
  readonly busyTimeoutMs: number;
  /** Whether `transactionAsync` calls of one turn commit together (OpenSqliteOptions.groupCommit). */
  readonly groupCommit: boolean;
  /** True while a transaction is open on this connection. */
  readonly inTransaction: boolean;
  /**
   * Runs `callback` once the outermost `transaction` call commits (dropped if its writes are rolled back), or at
   * once when called outside `transaction`. In a transaction begun outside this interface, callbacks run when the
   * outermost `transaction` call returns, since the real commit cannot be observed.
   */
  afterCommit(callback: () => void): void;
  close(): void;
  readonly isOpen: boolean;
}

export type SqliteSynchronous = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA';

export interface OpenSqliteOptions {
  /**
   * 'auto' (default) prefers `node:sqlite` when this Node has it (22.5+, without a flag from 22.13), so nothing
   * native is needed, and falls back to better-sqlite3.
   */
  driver?: 'auto' | SqliteDriverName;
  /**
   * `PRAGMA synchronous`. In WAL mode NORMAL (default) never corrupts the database; a power loss (not a process
   * crash) may undo the last transactions. FULL makes every commit durable at the cost of an fsync each.
   */
  synchronous?: SqliteSynchronous;
  /** How long a statement waits for another connection's write lock before failing with SQLITE_BUSY. Default 5000. */
  busyTimeoutMs?: number;
  /** `PRAGMA foreign_keys`. Default true. */
  foreignKeys?: boolean;
  /**
   * The most this connection's page cache holds, in KiB (`PRAGMA cache_size`); pages are taken as they are read, not
   * up front. Default 65536 (64 MiB). SQLite's own 2 MiB is smaller than the indexes of a busy store: inserts at
   * random places in an index then read most of their pages back from the file, which made them 40 % slower.
   */
  cacheSizeKiB?: number;
  /**
   * Group commit: every `transactionAsync` of one event-loop turn runs at the end of the turn in one write
   * transaction, each in its own savepoint (one `fn`'s error undoes only its own writes), and each promise settles
   * after that commit, as if its transaction had been alone. Under load, many commits become one; the price is that
   * `fn` no longer runs before `transactionAsync` returns, so code that only lets microtasks run between a write
   * and its check (a virtual clock's advance) sees the write later. Default false.
   */
  groupCommit?: boolean;
  /**
   * Who copies the WAL back into the database file. 'background' (default for a file): a worker thread with its
   * own connection (see BackgroundCheckpointer), so commits on this connection never wait for those copies and
   * their fsyncs. 'inline': SQLite's default, the commit that crosses 1000 WAL pages does it. An object: in the
   * background, with those settings.
   */
  checkpoint?: 'background' | 'inline' | CheckpointerOptions;
  /**
   * A lock shared by the threads of this process that open this file (sqliteThreadLock(), handed to each thread):
   * a writer that finds another thread writing waits to be woken when that thread's transaction ends, instead of
   * polling the file's write lock at every turn of its event loop. SQLite's lock still decides; this only says
   * when to ask it. Default none.
   */
  threadLock?: SharedArrayBuffer | undefined;
}

type CheckedOptions = Required<Omit<OpenSqliteOptions, 'threadLock'>> & {
  readonly threadLock: SharedArrayBuffer | undefined;
};

/** A lock word for OpenSqliteOptions.threadLock: create it once and pass it to every thread opening the file. */
export function sqliteThreadLock(): SharedArrayBuffer {
  return new SharedArrayBuffer(4);
}

/** The driver asked for cannot be loaded here, or the handle given is not one this module knows. */
export class SqliteDriverError extends StratusError {
  readonly driver: string;
  constructor(driver: string, message: string, options?: { cause?: unknown }) {
    super('ERR_STRATUS_SQLITE_DRIVER', message, options);
    this.driver = driver;
  }
}

/** The part of `node:sqlite` used here (typed locally: @types/node for Node 20 does not describe it). */
interface NodeSqliteStatement {
  run(...params: SqliteValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: SqliteValue[]): unknown;
  all(...params: SqliteValue[]): unknown[];
}
interface NodeSqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): NodeSqliteStatement;
  close(): void;
  readonly isOpen?: boolean;
  /** Node 22.16+ / 24; older versions lack it and the transaction depth tracked here is used instead. */
  readonly isTransaction?: boolean;
}
interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { enableForeignKeyConstraints?: boolean }) => NodeSqliteDatabase;
}

const require = createRequire(import.meta.url);

function loadNodeSqlite(): NodeSqliteModule | string {
  try {
    return require('node:sqlite') as NodeSqliteModule;
  } catch (error) {
    return `node:sqlite is not available on Node ${process.versions.node} (${(error as Error).message})`;
  }
}

function loadBetterSqlite3(): typeof BetterSqlite3 | string {
  try {
    const Database = require('better-sqlite3') as typeof BetterSqlite3;
    // The JS module loads even when its native addon was built for another Node; opening a database proves it.
    new Database(':memory:').close();
    return Database;
  } catch (error) {
    return `better-sqlite3 cannot be loaded on Node ${process.versions.node} (${(error as Error).message.split('\n')[0]})`;
  }
}

const loaded = new Map<SqliteDriverName, unknown>();
function load(driver: 'node:sqlite'): NodeSqliteModule | string;
function load(driver: 'better-sqlite3'): typeof BetterSqlite3 | string;
function load(driver: SqliteDriverName): unknown {
  if (!loaded.has(driver))
    loaded.set(driver, driver === 'node:sqlite' ? loadNodeSqlite() : loadBetterSqlite3());
  return loaded.get(driver);
}

/** True when `driver` can be used in this process, else the reason it cannot (for test skips and errors). */
export function sqliteDriverAvailable(driver: SqliteDriverName): true | string {
  const module = driver === 'node:sqlite' ? load('node:sqlite') : load('better-sqlite3');
  return typeof module === 'string' ? module : true;
}

function chooseDriver(requested: 'auto' | SqliteDriverName): SqliteDriverName {
  if (requested !== 'auto') {
    const available = sqliteDriverAvailable(requested);
    if (available !== true) throw new SqliteDriverError(requested, available);
    return requested;
  }
  if (sqliteDriverAvailable('node:sqlite') === true) return 'node:sqlite';
  const better = sqliteDriverAvailable('better-sqlite3');
  if (better !== true) {
    throw new SqliteDriverError(
      'auto',
      `No SQLite driver: node:sqlite needs Node 22.5+, and ${better}. Install better-sqlite3 or use Node 22.13+`,
    );
  }
  return 'better-sqlite3';
}

function checkOptions(options: OpenSqliteOptions): CheckedOptions {
  assertObject('options', options as unknown);
  const {
    driver = 'auto',
    synchronous = 'NORMAL',
    busyTimeoutMs = 5_000,
    foreignKeys = true,
    cacheSizeKiB = 65_536,
    checkpoint = 'background',
    groupCommit = false,
    threadLock,
  } = options;
  assertOneOf('driver', driver, ['auto', 'better-sqlite3', 'node:sqlite']);
  if (typeof checkpoint === 'object' && checkpoint !== null) {
    for (const [name, min] of [
      ['intervalMs', 1],
      ['restartPages', 1],
      ['maxStallMs', 0],
    ] as const) {
      const value = checkpoint[name];
      if (value !== undefined) assertInteger(`checkpoint.${name}`, value, min, 2 ** 31 - 1);
    }
  } else assertOneOf('checkpoint', checkpoint, ['background', 'inline']);
  assertOneOf('synchronous', synchronous, ['OFF', 'NORMAL', 'FULL', 'EXTRA']);
  assertInteger('busyTimeoutMs', busyTimeoutMs, 0, 2 ** 31 - 1);
  assertInteger('cacheSizeKiB', cacheSizeKiB, 1, 2 ** 31 - 1);
  if (typeof foreignKeys !== 'boolean') throw new InvalidOptionsError('foreignKeys', 'expected a boolean');
  if (typeof groupCommit !== 'boolean') throw new InvalidOptionsError('groupCommit', 'expected a boolean');
  if (threadLock !== undefined && !(threadLock instanceof SharedArrayBuffer && threadLock.byteLength >= 4))
    throw new InvalidOptionsError('threadLock', 'expected the SharedArrayBuffer of sqliteThreadLock()');
  return {
    driver,
    synchronous,
    busyTimeoutMs,
    foreignKeys,
    cacheSizeKiB,
    checkpoint,
    groupCommit,
    threadLock,
  };
}

/**
 * Opens (creating if needed) the database at `path` with the chosen driver and configures the connection for
 * sharing the file between processes: WAL journal (readers never block the writer), `synchronous`, a busy
 * timeout, foreign keys. The caller owns the result and closes it.
 */
export function openSqlite(path: string, options: OpenSqliteOptions = {}): SqliteDatabase {
  if (typeof path !== 'string' || path === '') throw new InvalidOptionsError('path', 'expected a file path');
  const checked = checkOptions(options);
  const driver = chooseDriver(checked.driver);
  let database: BaseSqlite;
  if (driver === 'node:sqlite') {
    const { DatabaseSync } = load('node:sqlite') as NodeSqliteModule;
    database = new NodeSqlite(
      new DatabaseSync(path, { enableForeignKeyConstraints: checked.foreignKeys }),
      path,
    );
  } else {
    const Database = load('better-sqlite3') as typeof BetterSqlite3;
    database = new BetterSqlite(new Database(path, { timeout: checked.busyTimeoutMs }), path);
  }
  // The handle is ours: the busy timeout can stay lowered between asynchronous transactions.
  database.lazyBusyTimeout = true;
  try {
    configure(database, checked);
  } catch (error) {
    database.close();
    throw error;
  }
  return database;
}

/**
 * Wraps a database handle the caller opened (a better-sqlite3 `Database` or a `node:sqlite` `DatabaseSync`) and
 * configures it as openSqlite does, except that checkpoints stay inline unless `checkpoint: 'background'` is
 * asked for (then close the wrapper, not the handle, to stop the worker). The handle stays the caller's: closing
 * the wrapper closes it, so only do that when you mean to.
 */
export function wrapSqlite(handle: unknown, options: Omit<OpenSqliteOptions, 'driver'> = {}): SqliteDatabase {
  const checked = checkOptions({ checkpoint: 'inline', ...options });
  const candidate = handle as { prepare?: unknown; pragma?: unknown; name?: unknown; location?: unknown };
  if (typeof candidate?.prepare !== 'function') {
    throw new SqliteDriverError(
      'unknown',
      'expected a better-sqlite3 Database or a node:sqlite DatabaseSync',
    );
  }
  const database =
    typeof candidate.pragma === 'function'
      ? new BetterSqlite(handle as BetterSqlite3.Database, String(candidate.name))
      : new NodeSqlite(handle as NodeSqliteDatabase, nodeSqlitePath(handle));
  configure(database, checked);
  return database;
}

function nodeSqlitePath(handle: unknown): string {
  const location = (handle as { location?: () => string | null }).location;
  return typeof location === 'function' ? (location.call(handle) ?? ':memory:') : ':memory:';
}

function configure(database: BaseSqlite, options: CheckedOptions): void {
  // The busy timeout first: switching a fresh file to WAL takes a lock that a second process may be holding.
  database.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs}`);
  database.busyTimeoutMs = options.busyTimeoutMs;
  database.groupCommit = options.groupCommit;
  if (options.threadLock !== undefined) database.shareThreadLock(options.threadLock);
  // Switching a fresh file to WAL can fail with SQLITE_BUSY at once, without SQLite's busy wait, while another
  // process opens it too: retry for as long as the busy timeout allows.
  const deadline = performance.now() + options.busyTimeoutMs;
  for (;;) {
    try {
      database.prepare('PRAGMA journal_mode = WAL').get();
      break;
    } catch (error) {
      if (!isBusy(error) || performance.now() >= deadline) throw error;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
  database.exec(`PRAGMA synchronous = ${options.synchronous}`);
  // A negative cache_size counts KiB rather than pages.
  database.exec(`PRAGMA cache_size = -${options.cacheSizeKiB}`);
  database.exec(`PRAGMA foreign_keys = ${options.foreignKeys ? 'ON' : 'OFF'}`);
  const { checkpoint } = options;
  if (checkpoint !== 'inline' && !isMemoryPath(database.path))
    database.checkpointInBackground(checkpoint === 'background' ? {} : checkpoint);
}

/** True for the paths SQLite opens as an in-memory database, which no other connection can see. */
export function isMemoryPath(path: string): boolean {
  return (
    path === '' || path === ':memory:' || path.startsWith('file::memory:') || /[?&]mode=memory/.test(path)
  );
}

export interface TransactionAsyncOptions {
  /**
   * Commit alone and at once (when the lock is free) rather than with the turn's group: for a writer whose next
   * step waits for this commit, a commit of its own costs less than waiting for the end of a busy turn.
   */
  readonly immediate?: boolean;
}

/** Longest wait for another thread's transaction to end before asking SQLite anyway (it may have died holding it). */
const THREAD_WAIT_MS = 50;

/** Atomics.waitAsync (Node 16+; not in the ES2023 library types). */
interface AtomicsWaitAsync {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeoutMs: number,
  ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
}

/** #tryBegin's answer when another thread of this process writes. */
const THREAD_BUSY = Symbol('another thread writes');

/** How long a writer that found the write lock taken retries at every turn of the event loop (#lockMayBeFree). */
const EAGER_RETRY_MS = 2;

/** Transactions, savepoints, after-commit callbacks and the statement cache, common to both drivers. */
abstract class BaseSqlite implements SqliteDatabase {
  abstract readonly driver: SqliteDriverName;
  abstract readonly handle: unknown;
  abstract readonly isOpen: boolean;
  readonly path: string;
  busyTimeoutMs = 0;
  groupCommit = false;
  /**
   * Whether #tryBegin may leave SQLite's busy timeout at 0 after its transaction (openSqlite's handles; a wrapped
   * handle stays as its owner configured it, since they may run statements on it directly).
   */
  lazyBusyTimeout = false;
  readonly #statements = new Map<string, SqliteStatement>();
  /**
   * SQLite's busy timeout is 0 on this connection, as #tryBegin left it. Setting it costs as much as an insert, and
   * two flips per transaction cost a send about 2 of its 35 µs; so it stays 0 while only asynchronous transactions
   * run (whose statements hold the write lock, or read a WAL snapshot, and never wait), and a statement that may
   * wait for a lock (anything run outside a transaction, and the synchronous `transaction`'s BEGIN) sets it back
   * first.
   */
  #busyTimeoutLowered = false;
  /** True while #tryBegin runs its BEGIN, which must not wait (so must not set the busy timeout back). */
  #tryingBegin = false;
  /** Transactions opened through `transaction` on this connection (1 = outermost, more = savepoints). */
  #depth = 0;
  #afterCommit: (() => void)[] = [];
  #checkpointer: BackgroundCheckpointer | undefined;
  /** `transactionAsync` calls waiting for this turn's group commit. */
  #queued: QueuedTransaction[] = [];
  #flushScheduled = false;
  /** When the group's flush first found the write lock taken, while it still does. */
  #busySince: number | undefined;
  /** OpenSqliteOptions.threadLock: 1 while a thread of this process has a write transaction open, else 0. */
  #threadLock: Int32Array | undefined;
  /** Whether this connection set the thread lock (it clears it when its transaction ends). */
  #holdsThreadLock = false;
  /** Whether the last wait for another thread's transaction timed out: its lock may be stale, ask SQLite. */
  #threadWaitTimedOut = false;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Waits until the write lock may be free. For its first 2 ms of waiting a writer tries again at the next turn of
   * the event loop: another thread of this process sharing the file (a web thread and a background thread) holds
   * the lock for a part of one of its turns, and a writer polling by timer keeps losing the lock to that thread's
   * next turn (measured: the conference system confirmed 145 orders/s at 200/s polling, 170/s retrying eagerly).
   * After that, every millisecond, as for other processes.
   */
  #lockMayBeFree(waitedMs: number): Promise<void> {
    const held = this.#threadWaitTimedOut ? undefined : this.#heldByThread();
    // Another thread of this process writes (it may have begun just before this one asked SQLite) or checkpoints:
    // be woken when it is done; the timeout covers a thread that died holding the lock.
    if (held !== undefined) {
      const wait = (Atomics as unknown as AtomicsWaitAsync).waitAsync(held, 0, 1, THREAD_WAIT_MS);
      if (wait.async) {
        // A pending waitAsync does not keep the event loop alive; this timer does, until the wait ends.
        const alive = setTimeout(() => {}, THREAD_WAIT_MS + 1);
        return wait.value.then((outcome) => {
          clearTimeout(alive);
          this.#threadWaitTimedOut = outcome === 'timed-out';
        });
      }
    }
    return new Promise((resolve) =>
      waitedMs < EAGER_RETRY_MS ? setImmediate(resolve) : setTimeout(resolve, 1),
    );
  }

  /** The lock word of another thread of this process that holds the write lock now (a writer or a checkpoint). */
  #heldByThread(): Int32Array | undefined {
    const lock = this.#threadLock;
    if (lock !== undefined && Atomics.load(lock, 0) !== 0) return lock;
    const restarting = this.#checkpointer?.restarting;
    if (restarting !== undefined && Atomics.load(restarting, 0) !== 0) return restarting;
    return undefined;
  }

  /** @internal Set by openSqlite (OpenSqliteOptions.threadLock). */
  shareThreadLock(buffer: SharedArrayBuffer): void {
    this.#threadLock = new Int32Array(buffer, 0, 1);
  }

  protected abstract compile(sql: string): SqliteStatement;
  protected abstract get driverInTransaction(): boolean | undefined;
  protected abstract closeHandle(): void;
  protected abstract execHandle(sql: string): void;

  exec(sql: string): void {
    this.#restoreBusyTimeout();
    this.execHandle(sql);
  }

  close(): void {
    // Transactions already asked for still run (or fail) rather than hang.
    if (this.#queued.length > 0 && this.isOpen) this.#flush();
    this.#checkpointer?.stop();
    this.#checkpointer = undefined;
    if (this.isOpen) this.closeHandle();
  }

  /** Hands WAL checkpoints to a worker thread; SQLite's own take over again if it fails. */
  checkpointInBackground(options: CheckpointerOptions): void {
    const checkpointer = new BackgroundCheckpointer(
      this.path,
      this.driver,
      () => {
        if (this.#checkpointer === checkpointer && this.isOpen) this.exec('PRAGMA wal_autocheckpoint = 1000');
      },
      options,
    );
    this.#checkpointer = checkpointer;
    this.exec(`PRAGMA wal_autocheckpoint = ${checkpointer.backstopPages}`);
  }

  prepare(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      // Some pragmas read the busy timeout when compiled (PRAGMA busy_timeout itself).
      this.#restoreBusyTimeout();
      const compiled = this.compile(sql);
      statement = {
        run: (...params) => {
          this.#restoreBusyTimeout();
          return compiled.run(...params);
        },
        get: <T>(...params: SqliteValue[]) => {
          this.#restoreBusyTimeout();
          return compiled.get<T>(...params);
        },
        all: <T>(...params: SqliteValue[]) => {
          this.#restoreBusyTimeout();
          return compiled.all<T>(...params);
        },
      };
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Sets SQLite's busy timeout back if #tryBegin left it at 0 and the statement about to run may have to wait. */
  #restoreBusyTimeout(): void {
    if (!this.#busyTimeoutLowered || this.#depth > 0 || this.#tryingBegin) return;
    this.#busyTimeoutLowered = false;
    this.prepare(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`).run();
  }

  get inTransaction(): boolean {
    return this.driverInTransaction ?? this.#depth > 0;
  }

  transaction<T>(fn: () => T): T {
    if (this.#depth === 0 && !this.inTransaction) return this.#outermost(fn);
    const savepoint = `stratus_${this.#depth}`;
    const callbacksBefore = this.#afterCommit.length;
    this.prepare(`SAVEPOINT ${savepoint}`).run();
    this.#depth++;
    try {
      const result = synchronously(fn);
      this.prepare(`RELEASE ${savepoint}`).run();
      return result;
    } catch (error) {
      this.prepare(`ROLLBACK TO ${savepoint}`).run();
      this.prepare(`RELEASE ${savepoint}`).run();
      this.#afterCommit.length = callbacksBefore;
      throw error;
    } finally {
      this.#depth--;
      // Joined a transaction begun outside this interface: its commit is out of sight (see afterCommit).
      if (this.#depth === 0) this.#runAfterCommit();
    }
  }

  async transactionAsync<T>(fn: () => T, options?: TransactionAsyncOptions): Promise<T> {
    if (!this.groupCommit || options?.immediate === true) return this.#transactionAlone(fn);
    if (this.#depth > 0 || this.inTransaction) return this.transaction(fn);
    return new Promise<T>((resolve, reject) => {
      this.#queued.push({
        fn,
        resolve: resolve as (value: unknown) => void,
        reject,
        deadline: performance.now() + this.busyTimeoutMs,
      });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  async #transactionAlone<T>(fn: () => T): Promise<T> {
    const started = performance.now();
    const deadline = started + this.busyTimeoutMs;
    for (;;) {
      // Checked on every attempt: a transaction may have been opened while this one waited.
      if (this.#depth > 0 || this.inTransaction) return this.transaction(fn);
      const busy = this.#tryBegin(deadline);
      if (busy === undefined) return this.#run(fn);
      const now = performance.now();
      // Past the deadline, the next attempt asks SQLite, whose error is the one to throw.
      if (now >= deadline && busy !== THREAD_BUSY) throw busy;
      await this.#lockMayBeFree(now - started);
    }
  }

  /** Runs the queued transactions, up to MAX_GROUP at a time, in one write transaction per group. */
  #flush(): void {
    this.#flushScheduled = false;
    while (this.#queued.length > 0) {
      if (!this.isOpen) {
        for (const entry of this.#queued.splice(0)) entry.reject(new TypeError('The database is closed'));
        return;
      }
      // A transaction begun outside this interface (and left open across an await): each joins it, as before.
      if (this.#depth > 0 || this.inTransaction) {
        for (const entry of this.#queued.splice(0)) settle(entry, () => this.transaction(entry.fn));
        return;
      }
      // The queue is in arrival order: its first entry has the earliest deadline.
      const busy = this.#tryBegin((this.#queued[0] as QueuedTransaction).deadline);
      if (busy !== undefined) {
        const now = performance.now();
        this.#busySince ??= now;
        // Only SQLite's own busy error expires entries (past a deadline, the next attempt asks SQLite).
        if (busy !== THREAD_BUSY) {
          const expired = this.#queued.filter((entry) => entry.deadline <= now);
          this.#queued = this.#queued.filter((entry) => entry.deadline > now);
          for (const entry of expired) entry.reject(busy);
        }
        if (this.#queued.length > 0 && !this.#flushScheduled) {
          this.#flushScheduled = true;
          void this.#lockMayBeFree(now - this.#busySince).then(() => this.#flush());
        }
        return;
      }
      this.#busySince = undefined;
      this.#runGroup(this.#queued.splice(0, MAX_GROUP));
    }
  }

  /** The group's transactions in one, once BEGIN IMMEDIATE succeeded; a lone one without a savepoint. */
  #runGroup(group: QueuedTransaction[]): void {
    if (group.length === 1) {
      const [entry] = group as [QueuedTransaction];
      settle(entry, () => this.#run(entry.fn));
      return;
    }
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    this.#depth++;
    let failure: { error: unknown } | undefined;
    for (const entry of group) {
      try {
        outcomes.push({ value: this.transaction(entry.fn) });
      } catch (error) {
        outcomes.push({ error });
        // An error that ended the whole transaction (SQLITE_FULL, an I/O error) takes the group with it.
        if (!this.inTransaction) {
          failure = { error };
          break;
        }
      }
    }
    try {
      if (failure === undefined) {
        try {
          this.prepare('COMMIT').run();
        } catch (error) {
          failure = { error };
          if (this.inTransaction) this.prepare('ROLLBACK').run();
        }
      }
    } finally {
      this.#depth--;
      this.#releaseThreadLock();
    }
    if (failure !== undefined) {
      this.#afterCommit = [];
      for (const entry of group) entry.reject(failure.error);
      return;
    }
    group.forEach((entry, i) => {
      const outcome = outcomes[i] as { value: unknown } | { error: unknown };
      if ('error' in outcome) entry.reject(outcome.error);
      else entry.resolve(outcome.value);
    });
    this.#runAfterCommit();
  }

  /**
   * BEGIN IMMEDIATE without SQLite's busy wait; the SQLITE_BUSY error when another connection writes. With a thread
   * lock, another thread of this process writing is known without asking SQLite: THREAD_BUSY, unless the last wait
   * for it timed out (the lock may be stale) or `deadline` passed (the caller wants SQLite's own answer).
   */
  #tryBegin(deadline = Number.POSITIVE_INFINITY): unknown {
    const stale = this.#threadWaitTimedOut;
    this.#threadWaitTimedOut = false;
    if (!stale && this.#heldByThread() !== undefined && performance.now() < deadline) return THREAD_BUSY;
    if (!this.#busyTimeoutLowered) {
      this.prepare('PRAGMA busy_timeout = 0').run();
      this.#busyTimeoutLowered = true;
    }
    this.#tryingBegin = true;
    try {
      this.prepare('BEGIN IMMEDIATE').run();
      this.#holdThreadLock();
      return undefined;
    } catch (error) {
      if (isBusy(error)) return error;
      throw error;
    } finally {
      this.#tryingBegin = false;
      if (!this.lazyBusyTimeout) this.#restoreBusyTimeout();
    }
  }

  #outermost<T>(fn: () => T): T {
    // Outside #tryBegin, this BEGIN sets the busy timeout back first: it waits with SQLite's own.
    this.prepare('BEGIN IMMEDIATE').run();
    this.#holdThreadLock();
    return this.#run(fn);
  }

  #holdThreadLock(): void {
    if (this.#threadLock === undefined) return;
    Atomics.store(this.#threadLock, 0, 1);
    this.#holdsThreadLock = true;
  }

  /** The write transaction ended (committed or rolled back): threads waiting to write may try now. */
  #releaseThreadLock(): void {
    if (!this.#holdsThreadLock) return;
    this.#holdsThreadLock = false;
    const lock = this.#threadLock as Int32Array;
    Atomics.store(lock, 0, 0);
    Atomics.notify(lock, 0);
  }

  /** The rest of an outermost transaction, once BEGIN IMMEDIATE succeeded. */
  #run<T>(fn: () => T): T {
    this.#depth++;
    let result: T;
    try {
      result = synchronously(fn);
      this.prepare('COMMIT').run();
    } catch (error) {
      this.#depth--;
      this.#afterCommit = [];
      // SQLite may already have rolled back on its own (e.g. SQLITE_FULL); ROLLBACK would then fail.
      try {
        if (this.inTransaction) this.prepare('ROLLBACK').run();
      } finally {
        this.#releaseThreadLock();
      }
      throw error;
    }
    this.#releaseThreadLock();
    this.#depth--;
    this.#runAfterCommit();
    return result;
  }

  afterCommit(callback: () => void): void {
    if (this.#depth > 0) this.#afterCommit.push(callback);
    else callback();
  }

  #runAfterCommit(): void {
    if (this.#afterCommit.length === 0) return;
    const callbacks = this.#afterCommit;
    this.#afterCommit = [];
    for (const callback of callbacks) callback();
  }
}

class NodeSqlite extends BaseSqlite {
  readonly driver = 'node:sqlite';
  readonly handle: NodeSqliteDatabase;

  constructor(handle: NodeSqliteDatabase, path: string) {
    super(path);
    this.handle = handle;
  }

  get isOpen(): boolean {
    return this.handle.isOpen ?? true;
  }

  protected get driverInTransaction(): boolean | undefined {
    return this.handle.isTransaction;
  }

  protected execHandle(sql: string): void {
    this.handle.exec(sql);
  }

  protected compile(sql: string): SqliteStatement {
    const statement = this.handle.prepare(sql);
    return {
      run(...params) {
        const { changes, lastInsertRowid } = statement.run(...params);
        return { changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) };
      },
      get<T>(...params: SqliteValue[]) {
        return statement.get(...params) as T | undefined;
      },
      all<T>(...params: SqliteValue[]) {
        return statement.all(...params) as T[];
      },
    };
  }

  protected closeHandle(): void {
    this.handle.close();
  }
}

class BetterSqlite extends BaseSqlite {
  readonly driver = 'better-sqlite3';
  readonly handle: BetterSqlite3.Database;

  constructor(handle: BetterSqlite3.Database, path: string) {
    super(path);
    this.handle = handle;
  }

  get isOpen(): boolean {
    return this.handle.open;
  }

  protected get driverInTransaction(): boolean {
    return this.handle.inTransaction;
  }

  protected execHandle(sql: string): void {
    this.handle.exec(sql);
  }

  protected compile(sql: string): SqliteStatement {
    const statement = this.handle.prepare<SqliteValue[]>(sql);
    return {
      run(...params) {
        const { changes, lastInsertRowid } = statement.run(...params);
        return { changes, lastInsertRowid: Number(lastInsertRowid) };
      },
      get<T>(...params: SqliteValue[]) {
        const row = statement.get(...params) as SqliteRow | undefined;
        return (row === undefined ? undefined : viewBlobs(row)) as T | undefined;
      },
      all<T>(...params: SqliteValue[]) {
        const rows = statement.all(...params) as SqliteRow[];
        for (const row of rows) viewBlobs(row);
        return rows as T[];
      },
    };
  }

  protected closeHandle(): void {
    this.handle.close();
  }
}

/** Something to Atomics.wait on: a synchronous sleep. */
const pause = new Int32Array(new SharedArrayBuffer(4));

/** SQLITE_BUSY (or one of its extended codes) from either driver. */
function isBusy(error: unknown): boolean {
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  return (
    (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) ||
    (typeof errcode === 'number' && (errcode & 0xff) === SQLITE_BUSY)
  );
}
const SQLITE_BUSY = 5;

interface QueuedTransaction {
  readonly fn: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** When it stops waiting for another connection's write lock. */
  readonly deadline: number;
}

/** Transactions committed together at most: bounds how long one group holds the write lock. */
const MAX_GROUP = 256;

function settle(entry: QueuedTransaction, run: () => unknown): void {
  let value: unknown;
  try {
    value = run();
  } catch (error) {
    entry.reject(error);
    return;
  }
  entry.resolve(value);
}

function synchronously<T>(fn: () => T): T {
  const result = fn();
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    throw new TypeError('SqliteDatabase.transaction: fn must be synchronous (it returned a promise)');
  }
  return result;
}

/** better-sqlite3 returns BLOBs as Buffers; node:sqlite as Uint8Arrays. Re-view them (no copy) as the latter. */
function viewBlobs(row: SqliteRow): SqliteRow {
  for (const key in row) {
    const value = row[key];
    if (value instanceof Buffer) row[key] = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  return row;
}

/** Checks that an adapter was given a database opened with openSqlite (or wrapped with wrapSqlite). */
export function assertSqliteDatabase(value: unknown, option = 'database'): asserts value is SqliteDatabase {
  if (typeof (value as Partial<SqliteDatabase> | undefined)?.transactionAsync !== 'function') {
    throw new InvalidOptionsError(option, 'expected a SqliteDatabase (see openSqlite)');
  }
}
