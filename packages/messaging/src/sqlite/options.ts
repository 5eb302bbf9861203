// The SQLite message backend's options, and opening (or adopting) its database from them.
import { assertDuration, assertObject, InvalidOptionsError } from '@stratus/core';
import { type OpenSqliteOptions, openSqlite, type SqliteDatabase } from '@stratus/sql';

export interface SqliteMessageBackendOptions {
  /** A database file to open (created if missing); the backend owns it and closes it on close(). */
  path?: string;
  /**
   * A database you opened with openSqlite or wrapSqlite; the backend never closes it. Share it with your own
   * tables to send messages in the same transaction as your writes (see SqliteDatabase.transaction).
   */
  database?: SqliteDatabase;
  /** Driver, synchronous, busyTimeoutMs and checkpoint for a `path` (see openSqlite). */
  driver?: OpenSqliteOptions['driver'];
  synchronous?: OpenSqliteOptions['synchronous'];
  busyTimeoutMs?: number;
  checkpoint?: OpenSqliteOptions['checkpoint'];
  /**
   * Group commit for a `path` (see openSqlite): the receives and settlements of one event-loop turn share one write
   * transaction, and sends made together (producers awaiting theirs at once) share one as soon as the code that made
   * them is done (see EAGER). Default true: 50 producers each awaiting its own send stored 61.6 k messages/s with it and
   * 27.7 k without (one commit each), and one producer sending back to back ran as fast either way.
   */
  groupCommit?: boolean;
  /**
   * How often a backend with watchers checks whether another process committed (PRAGMA data_version), in ms.
   * Watchers in this process are woken at once regardless. Default 25.
   */
  watchIntervalMs?: number;
}

/**
 * How sends and publishes join group commit: once the producers that awaited together have all called, not at the
 * end of the turn (see TransactionAsyncOptions.eager).
 */
export const EAGER = { eager: true } as const;

/** The validated options: the database to use, whether the backend owns it, and the watch interval. */
export interface SqliteBackendSetup {
  readonly database: SqliteDatabase;
  readonly owned: boolean;
  readonly watchIntervalMs: number;
}

export function setUpSqliteBackend(options: SqliteMessageBackendOptions): SqliteBackendSetup {
  assertObject('options', options as unknown);
  const {
    path,
    database,
    driver,
    synchronous,
    busyTimeoutMs,
    checkpoint,
    groupCommit = true,
    watchIntervalMs = 25,
  } = options;
  assertDuration('watchIntervalMs', watchIntervalMs, { allowZero: false });
  if ((path === undefined) === (database === undefined)) {
    throw new InvalidOptionsError('path', 'give either a path or a database');
  }
  if (database !== undefined) {
    if (typeof (database as Partial<SqliteDatabase>)?.transactionAsync !== 'function') {
      throw new InvalidOptionsError('database', 'expected a SqliteDatabase (see openSqlite and wrapSqlite)');
    }
    return { database, owned: false, watchIntervalMs };
  }
  return {
    database: openSqlite(path as string, { driver, synchronous, busyTimeoutMs, checkpoint, groupCommit }),
    owned: true,
    watchIntervalMs,
  };
}
