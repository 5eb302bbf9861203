import { assertDuration, assertObject, InvalidOptionsError, type Unsubscribe } from '@stratus/core';
import {
  fileKey,
  GroupCommit,
  migrateSqlite,
  type OpenSqliteOptions,
  openSqlite,
  SQLITE_LIMIT,
  type SqliteDatabase,
  WatchHub,
} from '@stratus/sql';
import { repeatedAppend, type StoredPlace, versionMatches } from '../append-rules.js';
import {
  type AppendRequest,
  type AppendResult,
  categoryOf,
  type EventStoreBackend,
  type ListParkedQuery,
  type ListStreamsQuery,
  type ParkedEvent,
  type ParkedSelection,
  type ParkedSummary,
  type ReadAllQuery,
  type ReadStreamQuery,
  type RecordedEvent,
  type StoredSnapshot,
  type StreamInfo,
} from '../backend.js';
import { EventStoreClosedError, WrongExpectedVersionError } from '../errors.js';
import { PARKED_COLUMNS, type ParkedRow, parkedFromRow, parkedParameters } from '../parked-rows.js';
import { EVENT_COLUMNS, type EventRow, READ_ALL_SQL, RecentEvents, recorded } from './recent-events.js';

export interface SqliteEventStoreBackendOptions {
  /** A database file to open (created if missing); the store owns it and closes it on close(). */
  readonly path?: string;
  /**
   * A database you opened with openSqlite (from @stratus/sql); the store never closes it. Share it with your
   * own tables, or with the SQLite message backend and outbox, to append in the same transaction as other writes.
   */
  readonly database?: SqliteDatabase;
  /** Driver, synchronous, busyTimeoutMs and checkpoint for a `path` (see openSqlite). */
  readonly driver?: OpenSqliteOptions['driver'];
  readonly synchronous?: OpenSqliteOptions['synchronous'];
  readonly busyTimeoutMs?: number;
  readonly checkpoint?: OpenSqliteOptions['checkpoint'];
  /** How often watchers look for appends made by other processes (this process's wake at once); default 25 ms. */
  readonly watchIntervalMs?: number;
}

/**
 * Schema of the 'eventstore' component. Positions are the events' rowids: SQLite has one writer at a time and a
 * position is taken inside the write transaction, so positions grow in commit order and a reader never sees a
 * later position before an earlier one.
 */
const MIGRATIONS = [
  `CREATE TABLE es_streams (
     name TEXT PRIMARY KEY,
     category TEXT NOT NULL,
     version INTEGER NOT NULL,
     created_at REAL NOT NULL,
     updated_at REAL NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX es_streams_by_category ON es_streams (category, name);
   CREATE TABLE es_events (
     position INTEGER PRIMARY KEY,
     stream_name TEXT NOT NULL,
     version INTEGER NOT NULL,
     id TEXT NOT NULL UNIQUE,
     type TEXT NOT NULL,
     data TEXT NOT NULL,
     metadata TEXT NOT NULL,
     schema_version INTEGER NOT NULL,
     recorded_at REAL NOT NULL,
     UNIQUE (stream_name, version)
   );
   CREATE TABLE es_checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
   CREATE TABLE es_snapshots (
     stream_name TEXT PRIMARY KEY,
     version INTEGER NOT NULL,
     state TEXT NOT NULL,
     schema_version INTEGER NOT NULL,
     taken_at REAL NOT NULL
   ) WITHOUT ROWID;`,
  `CREATE TABLE es_parked (
     subscription TEXT NOT NULL,
     position INTEGER NOT NULL,
     event_id TEXT NOT NULL,
     event_type TEXT NOT NULL,
     stream_name TEXT NOT NULL,
     keys TEXT NOT NULL,
     reason TEXT NOT NULL,
     error TEXT NOT NULL,
     attempts INTEGER NOT NULL,
     parked_at REAL NOT NULL,
     retry_requested INTEGER NOT NULL,
     PRIMARY KEY (subscription, position)
   ) WITHOUT ROWID;`,
];

const SQL = {
  streamVersion: 'SELECT version FROM es_streams WHERE name = ?',
  insertEvent:
    'INSERT INTO es_events (stream_name, version, id, type, data, metadata, schema_version, recorded_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  upsertStream:
    'INSERT INTO es_streams (name, category, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ' +
    'ON CONFLICT (name) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at',
  placeOf: 'SELECT stream_name, version, position FROM es_events WHERE id = ?',
  readForwards: `SELECT ${EVENT_COLUMNS} FROM es_events WHERE stream_name = ? AND version >= ? ORDER BY version ${SQLITE_LIMIT}`,
  readBackwards: `SELECT ${EVENT_COLUMNS} FROM es_events WHERE stream_name = ? AND version <= ? ORDER BY version DESC ${SQLITE_LIMIT}`,
  readAll: READ_ALL_SQL,
  head: 'SELECT coalesce(max(position), 0) AS head FROM es_events',
  listAll: `SELECT name, category, version, created_at, updated_at FROM es_streams WHERE name > ? ORDER BY name ${SQLITE_LIMIT}`,
  listCategory:
    'SELECT name, category, version, created_at, updated_at FROM es_streams ' +
    `WHERE category = ? AND name > ? ORDER BY name ${SQLITE_LIMIT}`,
  loadCheckpoint: 'SELECT position FROM es_checkpoints WHERE name = ?',
  storeCheckpoint:
    'INSERT INTO es_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position',
  parkEvent:
    `INSERT INTO es_parked (${PARKED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ` +
    'ON CONFLICT (subscription, position) DO UPDATE SET keys = excluded.keys, reason = excluded.reason, ' +
    'error = excluded.error, attempts = excluded.attempts, parked_at = excluded.parked_at, ' +
    'retry_requested = excluded.retry_requested',
  listParked: `SELECT ${PARKED_COLUMNS} FROM es_parked WHERE subscription = ? AND position > ? ORDER BY position ${SQLITE_LIMIT}`,
  removeParked:
    'DELETE FROM es_parked WHERE subscription = ? AND position IN (SELECT value FROM json_each(?))',
  removeAllParked: 'DELETE FROM es_parked WHERE subscription = ?',
  requestParkedRetry:
    'UPDATE es_parked SET retry_requested = 1 WHERE subscription = ? AND position IN (SELECT value FROM json_each(?))',
  requestAllParkedRetry: 'UPDATE es_parked SET retry_requested = 1 WHERE subscription = ?',
  countParked: 'SELECT subscription, count(*) AS parked FROM es_parked GROUP BY subscription',
  summarizeParked:
    'SELECT count(*) AS parked, coalesce(sum(retry_requested), 0) AS retry_requested FROM es_parked WHERE subscription = ?',
  loadSnapshot: 'SELECT version, state, schema_version, taken_at FROM es_snapshots WHERE stream_name = ?',
  storeSnapshot:
    'INSERT INTO es_snapshots (stream_name, version, state, schema_version, taken_at) VALUES (?, ?, ?, ?, ?) ' +
    'ON CONFLICT (stream_name) DO UPDATE SET version = excluded.version, state = excluded.state, ' +
    'schema_version = excluded.schema_version, taken_at = excluded.taken_at',
} as const;

interface StreamRow {
  name: string;
  category: string;
  version: number;
  created_at: number;
  updated_at: number;
}

const ALL = '$all';

/** Thrown inside the append transaction to roll it back; classified once the write lock is released. */
class AppendRefused {
  constructor(readonly version: number) {}
}

function isUniqueViolation(error: unknown): boolean {
  const { code, errcode, message } = error as { code?: string; errcode?: number; message?: string };
  // better-sqlite3: code 'SQLITE_CONSTRAINT_UNIQUE'; node:sqlite: errcode 2067 (extended result code).
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' || errcode === 2067 || /UNIQUE constraint failed/.test(message ?? '')
  );
}

/**
 * The event store on SQLite, the embedded default. Several processes may share the file: appends take the
 * write lock (waiting without blocking the event loop), and watchers in other processes notice appends by polling
 * `PRAGMA data_version` (see WatchHub).
 */
export class SqliteEventStoreBackend implements EventStoreBackend {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;
  readonly #owned: boolean;
  readonly #hub: WatchHub;
  readonly #recent: RecentEvents;
  #closed = false;

  readonly #appends = new GroupCommit<AppendRequest, AppendResult | { refused: unknown }>((requests) =>
    this.#appendBatch(requests),
  );

  constructor(options: SqliteEventStoreBackendOptions) {
    assertObject('options', options as unknown);
    const { path, database, driver, synchronous, busyTimeoutMs, checkpoint, watchIntervalMs = 25 } = options;
    assertDuration('watchIntervalMs', watchIntervalMs, { allowZero: false });
    if ((path === undefined) === (database === undefined)) {
      throw new InvalidOptionsError('path', 'give either a path or an open database');
    }
    if (database !== undefined) {
      if (typeof (database as Partial<SqliteDatabase>)?.transactionAsync !== 'function') {
        throw new InvalidOptionsError('database', 'expected a SqliteDatabase (see openSqlite)');
      }
      this.database = database;
      this.#owned = false;
    } else {
      if (typeof path !== 'string' || path.length === 0)
        throw new InvalidOptionsError('path', 'expected a file path');
      this.database = openSqlite(path, { driver, synchronous, busyTimeoutMs, checkpoint });
      this.#owned = true;
    }
    migrateSqlite(this.database, 'eventstore', MIGRATIONS);
    this.#recent = RecentEvents.of(this.database);
    this.#hub = new WatchHub(
      fileKey(this.database.path),
      this.database,
      () => String(this.#head()),
      watchIntervalMs,
    );
  }

  /**
   * Appends that arrive while a write is in flight go together in the next transaction, each in its own savepoint:
   * one refused append does not undo the others, and N concurrent appends cost one commit instead of N.
   */
  async append(request: AppendRequest): Promise<AppendResult> {
    // Inside a transaction the caller opened, the append joins it at once (the events commit with the caller's writes).
    // With the driver's group commit the turn's appends already share a commit: grouping them here too would make
    // an append wait for the previous group's commit before joining the next.
    const db = this.#db();
    const outcome =
      db.inTransaction || db.groupCommit || request.immediate === true
        ? ((await this.#appendBatch([request], request.immediate === true))[0] as
            | AppendResult
            | { refused: unknown })
        : await this.#appends.submit(request);
    if (!('refused' in outcome)) return outcome;
    const { streamName, expectedVersion, events } = request;
    const error = outcome.refused;
    const repeat = repeatedAppend(streamName, events, (id) => this.#placeOf(id));
    const version = await this.streamVersion(streamName);
    if (repeat !== undefined) return { ...repeat, nextExpectedVersion: version };
    if (error instanceof AppendRefused)
      throw new WrongExpectedVersionError(streamName, expectedVersion, error.version);
    // A unique violation on (stream, version) cannot happen under the write lock; on id, repeatedAppend threw.
    throw error;
  }

  #appendBatch(
    requests: AppendRequest[],
    immediate = false,
  ): Promise<(AppendResult | { refused: unknown })[]> {
    const db = this.#db();
    return db.transactionAsync(
      () => {
        const rows: EventRow[] = [];
        const outcomes = requests.map((request) => {
          try {
            return db.transaction(() => this.#appendNow(db, request, rows));
          } catch (error) {
            if (error instanceof AppendRefused || isUniqueViolation(error)) return { refused: error };
            throw error;
          }
        });
        db.afterCommit(() => {
          this.#recent.add(rows);
          this.#hub.notify(ALL);
        });
        return outcomes;
      },
      { immediate },
    );
  }

  /** Appends one request (in the caller's savepoint), adding what it wrote to `rows` once it cannot fail. */
  #appendNow(db: SqliteDatabase, request: AppendRequest, rows: EventRow[]): AppendResult {
    const { streamName, expectedVersion, events, now } = request;
    const version = db.prepare(SQL.streamVersion).get<{ version: number }>(streamName)?.version ?? 0;
    if (!versionMatches(expectedVersion, version)) throw new AppendRefused(version);
    if (events.length === 0) {
      return { streamName, nextExpectedVersion: version, firstPosition: 0, lastPosition: 0, written: false };
    }
    const insert = db.prepare(SQL.insertEvent);
    let firstPosition = 0;
    let lastPosition = 0;
    const written: EventRow[] = [];
    for (let i = 0; i < events.length; i++) {
      const event = events[i] as AppendRequest['events'][number];
      lastPosition = insert.run(
        streamName,
        version + i + 1,
        event.id,
        event.type,
        event.data,
        event.metadata,
        event.schemaVersion,
        now,
      ).lastInsertRowid;
      if (i === 0) firstPosition = lastPosition;
      written.push({
        position: lastPosition,
        stream_name: streamName,
        version: version + i + 1,
        id: event.id,
        type: event.type,
        data: event.data,
        metadata: event.metadata,
        schema_version: event.schemaVersion,
        recorded_at: now,
      });
    }
    const next = version + events.length;
    db.prepare(SQL.upsertStream).run(streamName, categoryOf(streamName), next, now, now);
    rows.push(...written);
    return { streamName, nextExpectedVersion: next, firstPosition, lastPosition, written: true };
  }

  async readStream(streamName: string, query: ReadStreamQuery = {}): Promise<RecordedEvent[]> {
    const db = this.#db();
    const { direction = 'forwards', maxCount = -1 } = query;
    const rows =
      direction === 'forwards'
        ? db.prepare(SQL.readForwards).all<EventRow>(streamName, query.from ?? 1, maxCount)
        : db
            .prepare(SQL.readBackwards)
            .all<EventRow>(streamName, query.from ?? Number.MAX_SAFE_INTEGER, maxCount);
    return rows.map(recorded);
  }

  async streamVersion(streamName: string): Promise<number> {
    return this.#db().prepare(SQL.streamVersion).get<{ version: number }>(streamName)?.version ?? 0;
  }

  async readAll(query: ReadAllQuery = {}): Promise<RecordedEvent[]> {
    const { after = 0, maxCount = 1000 } = query;
    const db = this.#db();
    return (
      this.#recent.read(after, maxCount) ??
      db.prepare(SQL.readAll).all<EventRow>(after, maxCount).map(recorded)
    );
  }

  async headPosition(): Promise<number> {
    this.#db();
    return this.#head();
  }

  async listStreams(query: ListStreamsQuery = {}): Promise<StreamInfo[]> {
    const db = this.#db();
    const { category, after = '', limit = 100 } = query;
    const rows =
      category === undefined
        ? db.prepare(SQL.listAll).all<StreamRow>(after, limit)
        : db.prepare(SQL.listCategory).all<StreamRow>(category, after, limit);
    return rows.map((row) => ({
      streamName: row.name,
      category: row.category,
      version: row.version,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }));
  }

  async loadCheckpoint(name: string): Promise<number | undefined> {
    return this.#db().prepare(SQL.loadCheckpoint).get<{ position: number }>(name)?.position;
  }

  async storeCheckpoint(name: string, position: number): Promise<void> {
    const db = this.#db();
    await db.transactionAsync(() => db.prepare(SQL.storeCheckpoint).run(name, position));
  }

  async parkEvents(events: readonly ParkedEvent[]): Promise<void> {
    const db = this.#db();
    await db.transactionAsync(() => {
      const statement = db.prepare(SQL.parkEvent);
      for (const event of events) statement.run(...parkedParameters(event));
    });
  }

  async listParked(subscription: string, query: ListParkedQuery = {}): Promise<ParkedEvent[]> {
    const { after = 0, limit = 1000 } = query;
    return this.#db().prepare(SQL.listParked).all<ParkedRow>(subscription, after, limit).map(parkedFromRow);
  }

  async removeParked(subscription: string, selection: ParkedSelection): Promise<number> {
    return this.#changeParked(subscription, selection, SQL.removeAllParked, SQL.removeParked);
  }

  async requestParkedRetry(subscription: string, selection: ParkedSelection): Promise<number> {
    return this.#changeParked(subscription, selection, SQL.requestAllParkedRetry, SQL.requestParkedRetry);
  }

  async summarizeParked(subscription: string): Promise<ParkedSummary> {
    const row = this.#db()
      .prepare(SQL.summarizeParked)
      .get<{ parked: number; retry_requested: number }>(subscription) as {
      parked: number;
      retry_requested: number;
    };
    return { parked: row.parked, retryRequested: row.retry_requested };
  }

  async countParked(): Promise<Record<string, number>> {
    const rows = this.#db().prepare(SQL.countParked).all<{ subscription: string; parked: number }>();
    return Object.fromEntries(rows.map((row) => [row.subscription, row.parked]));
  }

  async #changeParked(
    subscription: string,
    selection: ParkedSelection,
    all: string,
    some: string,
  ): Promise<number> {
    const db = this.#db();
    return db.transactionAsync(() =>
      selection === 'all'
        ? db.prepare(all).run(subscription).changes
        : db.prepare(some).run(subscription, JSON.stringify(selection)).changes,
    );
  }

  async loadSnapshot(streamName: string): Promise<StoredSnapshot | undefined> {
    const row = this.#db()
      .prepare(SQL.loadSnapshot)
      .get<{ version: number; state: string; schema_version: number; taken_at: number }>(streamName);
    if (row === undefined) return undefined;
    return {
      streamName,
      version: row.version,
      state: row.state,
      schemaVersion: row.schema_version,
      takenAt: row.taken_at,
    };
  }

  async storeSnapshot(snapshot: StoredSnapshot): Promise<void> {
    const db = this.#db();
    const { streamName, version, state, schemaVersion, takenAt } = snapshot;
    await db.transactionAsync(() =>
      db.prepare(SQL.storeSnapshot).run(streamName, version, state, schemaVersion, takenAt),
    );
  }

  async watch(listener: () => void): Promise<Unsubscribe> {
    this.#db();
    return this.#hub.watch(ALL, listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#hub.close();
    if (this.#owned) this.database.close();
  }

  #head(): number {
    return this.database.prepare(SQL.head).get<{ head: number }>()?.head ?? 0;
  }

  #placeOf(id: string): StoredPlace | undefined {
    const row = this.database
      .prepare(SQL.placeOf)
      .get<{ stream_name: string; version: number; position: number }>(id);
    return row === undefined
      ? undefined
      : { streamName: row.stream_name, streamVersion: row.version, globalPosition: row.position };
  }

  #db(): SqliteDatabase {
    if (this.#closed || !this.database.isOpen) throw new EventStoreClosedError();
    return this.database;
  }
}
