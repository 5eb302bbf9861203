import { assertInteger, assertObject, assertOneOf, InvalidOptionsError } from '@stratus/core';
import type BetterSqlite3 from 'better-sqlite3';
import type { BaseSqlite } from './base-sqlite.js';
import { BetterSqlite } from './better-sqlite.js';
import { isBusy, pause } from './busy.js';
import type { CheckpointerOptions } from './checkpointer.js';
import { isMemoryPath, type SqliteDatabase, type SqliteDriverName } from './database.js';
import { chooseDriver, load, SqliteDriverError } from './drivers.js';
import { NodeSqlite, type NodeSqliteDatabase, type NodeSqliteModule } from './node-sqlite.js';

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
