import { createHash } from 'node:crypto';
import type { Unsubscribe } from '@stratus/core';
import {
  checkPostgresConnection,
  GroupCommit,
  migratePostgres,
  NotificationListener,
  type OwnPool,
  openOwnPool,
  type PostgresConnectionOptions,
  postgresTypes,
} from '@stratus/sql';
import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import { repeatedAppend, type StoredPlace } from '../append-rules.js';
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
import { eventStoreMigrations } from './schema.js';

export type PostgresEventStoreBackendOptions = PostgresConnectionOptions;

const MODES = { any: 1, 'no-stream': 2, 'stream-exists': 3 } as const;
const APPENDED = 0;
const WRONG_VERSION = 1;

interface EventRow {
  position: string;
  stream_name: string;
  version: string;
  id: string;
  type: string;
  data: unknown;
  metadata: RecordedEvent['metadata'];
  schema_version: number;
  recorded_at: number;
}

interface AppendRow {
  outcome: number;
  version: string;
  first_position: string;
  last_position: string;
}

function recorded(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    schemaVersion: row.schema_version,
    streamName: row.stream_name,
    streamVersion: Number(row.version),
    globalPosition: Number(row.position),
    recordedAt: row.recorded_at,
  };
}

/** One append as the es_append function takes it; data and metadata are spliced in as the JSON text they are. */
function requestJson(request: AppendRequest): string {
  const { expectedVersion, events } = request;
  const mode = typeof expectedVersion === 'number' ? 0 : MODES[expectedVersion];
  const ids = JSON.stringify(events.map((e) => e.id));
  const types = JSON.stringify(events.map((e) => e.type));
  const versions = JSON.stringify(events.map((e) => e.schemaVersion));
  const data = events.map((e) => e.data).join(',');
  const metadata = events.map((e) => e.metadata).join(',');
  return (
    `{"s":${JSON.stringify(request.streamName)},"c":${JSON.stringify(categoryOf(request.streamName))},` +
    `"m":${mode},"e":${typeof expectedVersion === 'number' ? expectedVersion : 0},` +
    `"i":${ids},"t":${types},"d":[${data}],"x":[${metadata}],"v":${versions}}`
  );
}

/** PostgreSQL's error code for a unique index refusing a row. */
const UNIQUE_VIOLATION = '23505';

/** A 31-bit lock key from a name (the two-key form of the advisory lock functions takes int4 keys). */
function int4Key(name: string): number {
  return createHash('sha1').update(`stratus:${name}`).digest().readInt32BE(0);
}

/**
 * The event store on PostgreSQL. Appends are one call of a plpgsql function (one round trip, one transaction);
 * concurrent appends are group-committed: those arriving while one call is in flight go together in the next,
 * each with its own outcome. Reads of all events wait at the commit horizon (see schema.ts) so subscribers never
 * skip an event; LISTEN/NOTIFY wakes watchers.
 */
export class PostgresEventStoreBackend implements EventStoreBackend {
  readonly kind = 'postgres';
  readonly schema: string;
  readonly #ownPool: OwnPool | undefined;
  #pool: Pool | undefined;
  #ready: Promise<Pool> | undefined;
  readonly #listener: NotificationListener;
  readonly #appends: GroupCommit<AppendRequest, AppendRow | Error>;
  readonly #sql: ReturnType<typeof statements>;
  /** readAll calls not sent yet, by bounds. */
  readonly #pendingReads = new Map<string, Promise<RecordedEvent[]>>();
  /** readAll queries on their way, by the position they read after. */
  readonly #runningReads = new Map<number, Promise<RecordedEvent[]>>();
  #closed = false;

  constructor(options: PostgresEventStoreBackendOptions) {
    const { pool, ownPool, schema } = checkPostgresConnection(options);
    this.#ownPool = ownPool;
    this.#pool = pool;
    this.schema = schema;
    this.#sql = statements(schema);
    this.#listener = new NotificationListener(
      async () => (await this.#ensureReady()).connect(),
      channelOf(schema),
    );
    this.#appends = new GroupCommit((requests) => this.#appendTogether(requests), 200);
  }

  /** Creates or upgrades the schema now (otherwise the first operation does). Safe to run from many processes. */
  async migrate(): Promise<void> {
    await this.#ensureReady();
  }

  async append(request: AppendRequest): Promise<AppendResult> {
    const row = await this.#appends.submit(request);
    if (row instanceof Error) throw row;
    const { streamName, expectedVersion, events } = request;
    const version = Number(row.version);
    if (row.outcome === APPENDED) {
      return {
        streamName,
        nextExpectedVersion: version,
        firstPosition: Number(row.first_position),
        lastPosition: Number(row.last_position),
        written: events.length > 0,
      };
    }
    const places = await this.#placesOf(events.map((e) => e.id));
    const repeat = repeatedAppend(streamName, events, (id) => places.get(id));
    if (repeat !== undefined) return { ...repeat, nextExpectedVersion: await this.streamVersion(streamName) };
    if (row.outcome === WRONG_VERSION)
      throw new WrongExpectedVersionError(streamName, expectedVersion, version);
    // An id was taken when checked but is gone now: impossible, events are never deleted.
    throw new Error(`es_append refused an append to "${streamName}" for an id that is not stored`);
  }

  async readStream(streamName: string, query: ReadStreamQuery = {}): Promise<RecordedEvent[]> {
    const { direction = 'forwards', maxCount = null } = query;
    const rows =
      direction === 'forwards'
        ? await this.#query<EventRow>(this.#sql.readForwards, [streamName, query.from ?? 1, maxCount])
        : await this.#query<EventRow>(this.#sql.readBackwards, [
            streamName,
            query.from ?? Number.MAX_SAFE_INTEGER,
            maxCount,
          ]);
    return rows.map(recorded);
  }

  async streamVersion(streamName: string): Promise<number> {
    const [row] = await this.#query<{ version: string }>(this.#sql.streamVersion, [streamName]);
    return row === undefined ? 0 : Number(row.version);
  }

  /**
   * Reads asked for with the same bounds before the query goes out (subscriptions and runners of one process woken
   * by the same append) share it: each caller still gets everything committed before it asked. A `following` read
   * also joins a read from the same position already on its way, when that one finds events.
   */
  readAll(query: ReadAllQuery = {}): Promise<RecordedEvent[]> {
    const { after = 0, maxCount = 1000, following = false } = query;
    const running = following ? this.#runningReads.get(after) : undefined;
    if (running === undefined) return this.#readAllShared(after, maxCount);
    return running.then((events) =>
      events.length > 0 ? events.slice(0, maxCount) : this.#readAllShared(after, maxCount),
    );
  }

  #readAllShared(after: number, maxCount: number): Promise<RecordedEvent[]> {
    const key = `${after}:${maxCount}`;
    let reading = this.#pendingReads.get(key);
    if (reading === undefined) {
      const sent = new Promise<RecordedEvent[]>((resolve, reject) => {
        setImmediate(() => {
          this.#pendingReads.delete(key);
          this.#runningReads.set(after, sent);
          this.#query<EventRow>(this.#sql.readAll, [after, maxCount])
            .then((rows) => resolve(rows.map(recorded)), reject)
            .finally(() => {
              if (this.#runningReads.get(after) === sent) this.#runningReads.delete(after);
            });
        });
      });
      reading = sent;
      this.#pendingReads.set(key, reading);
    }
    // Each caller gets its own array of the shared events.
    return reading.then((events) => events.slice());
  }

  async headPosition(): Promise<number> {
    const [row] = await this.#query<{ head: string }>(this.#sql.head, []);
    return Number(row?.head ?? 0);
  }

  async listStreams(query: ListStreamsQuery = {}): Promise<StreamInfo[]> {
    const { category = null, after = '', limit = 100 } = query;
    const rows = await this.#query<{
      name: string;
      category: string;
      version: string;
      created_at: number;
      updated_at: number;
    }>(this.#sql.listStreams, [category, after, limit]);
    return rows.map((row) => ({
      streamName: row.name,
      category: row.category,
      version: Number(row.version),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }));
  }

  async loadCheckpoint(name: string): Promise<number | undefined> {
    const [row] = await this.#query<{ position: string }>(this.#sql.loadCheckpoint, [name]);
    return row === undefined ? undefined : Number(row.position);
  }

  async storeCheckpoint(name: string, position: number): Promise<void> {
    await this.#query(this.#sql.storeCheckpoint, [name, position]);
  }

  async parkEvents(events: readonly ParkedEvent[]): Promise<void> {
    if (events.length === 0) return;
    // One statement for all of them: the rows as a JSON array of value arrays.
    await this.#query(this.#sql.parkEvents, [JSON.stringify(events.map(parkedParameters))]);
  }

  async listParked(subscription: string, query: ListParkedQuery = {}): Promise<ParkedEvent[]> {
    const { after = 0, limit = 1000 } = query;
    const rows = await this.#query<ParkedRow>(this.#sql.listParked, [subscription, after, limit]);
    return rows.map(parkedFromRow);
  }

  async removeParked(subscription: string, selection: ParkedSelection): Promise<number> {
    return this.#changeParked(this.#sql.removeParked, subscription, selection);
  }

  async requestParkedRetry(subscription: string, selection: ParkedSelection): Promise<number> {
    return this.#changeParked(this.#sql.requestParkedRetry, subscription, selection);
  }

  async summarizeParked(subscription: string): Promise<ParkedSummary> {
    const [row] = await this.#query<{ parked: number; retry_requested: number }>(this.#sql.summarizeParked, [
      subscription,
    ]);
    return { parked: row?.parked ?? 0, retryRequested: row?.retry_requested ?? 0 };
  }

  async countParked(): Promise<Record<string, number>> {
    const rows = await this.#query<{ subscription: string; parked: number }>(this.#sql.countParked, []);
    return Object.fromEntries(rows.map((row) => [row.subscription, row.parked]));
  }

  /** Runs a statement over some parked events ($2 null: all of them); resolves with how many rows it changed. */
  async #changeParked(
    statement: QueryConfig,
    subscription: string,
    selection: ParkedSelection,
  ): Promise<number> {
    const pool = await this.#ensureReady();
    const positions = selection === 'all' ? null : selection.map(Number);
    const result = await pool.query({ ...statement, values: [subscription, positions] });
    return result.rowCount ?? 0;
  }

  async loadSnapshot(streamName: string): Promise<StoredSnapshot | undefined> {
    const [row] = await this.#query<{
      version: string;
      state: string;
      schema_version: number;
      taken_at: number;
    }>(this.#sql.loadSnapshot, [streamName]);
    if (row === undefined) return undefined;
    return {
      streamName,
      version: Number(row.version),
      state: row.state,
      schemaVersion: row.schema_version,
      takenAt: row.taken_at,
    };
  }

  async storeSnapshot(snapshot: StoredSnapshot): Promise<void> {
    const { streamName, version, state, schemaVersion, takenAt } = snapshot;
    await this.#query(this.#sql.storeSnapshot, [streamName, version, state, schemaVersion, takenAt]);
  }

  async watch(listener: () => void): Promise<Unsubscribe> {
    if (this.#closed) throw new EventStoreClosedError();
    const stop = this.#listener.watch('$all', listener);
    await this.#listener.opened();
    return stop;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#listener.close();
    await this.#ready?.catch(() => undefined);
    if (this.#ownPool !== undefined) await this.#pool?.end();
  }

  /**
   * One es_append call for the group. When it fails as a whole (a data error in one request, a race on an id),
   * each request is tried alone so only the faulty one fails. A race on an id (an append of the same id committed
   * after es_append checked it) is tried again even alone: the id is then seen as stored, and reported as such.
   */
  async #appendTogether(requests: AppendRequest[]): Promise<(AppendRow | Error)[]> {
    const now = Math.max(...requests.map((r) => r.now));
    const call = (group: AppendRequest[]) =>
      this.#query<AppendRow>(this.#sql.append, [`[${group.map(requestJson).join(',')}]`, now]);
    try {
      return await call(requests);
    } catch (error) {
      if (requests.length === 1 && (error as { code?: unknown }).code !== UNIQUE_VIOLATION)
        return [error as Error];
      return Promise.all(
        requests.map(async (request) => {
          try {
            return (await call([request]))[0] as AppendRow;
          } catch (alone) {
            return alone as Error;
          }
        }),
      );
    }
  }

  async #placesOf(ids: string[]): Promise<Map<string, StoredPlace>> {
    const rows = await this.#query<{ id: string; stream_name: string; version: string; position: string }>(
      this.#sql.placesOf,
      [ids],
    );
    return new Map(
      rows.map((row) => [
        row.id,
        {
          streamName: row.stream_name,
          streamVersion: Number(row.version),
          globalPosition: Number(row.position),
        },
      ]),
    );
  }

  async #query<R extends QueryResultRow>(
    statement: { name: string; text: string },
    values: unknown[],
  ): Promise<R[]> {
    const pool = await this.#ensureReady();
    const config: QueryConfig = { name: statement.name, text: statement.text, values, types: postgresTypes };
    return (await pool.query<R>(config)).rows;
  }

  #ensureReady(): Promise<Pool> {
    if (this.#closed) return Promise.reject(new EventStoreClosedError());
    this.#ready ??= this.#open().catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  async #open(): Promise<Pool> {
    let pool = this.#pool;
    if (pool === undefined) {
      pool = await openOwnPool(this.#ownPool as OwnPool);
      this.#pool = pool;
    }
    await migratePostgres(
      pool,
      this.schema,
      'eventstore',
      eventStoreMigrations(this.schema, int4Key(`horizon:${this.schema}`), channelOf(this.schema)),
    );
    return pool;
  }
}

function channelOf(schema: string): string {
  return `stratus_es_${schema}`;
}

function statements(schema: string) {
  const S = `"${schema}"`;
  const named = (key: string, text: string) => ({ name: `stratus_es_${schema}_${key}`, text });
  const columns = 'position, stream_name, version, id, type, data, metadata, schema_version, recorded_at';
  return {
    append: named('append', `SELECT * FROM ${S}.es_append($1::jsonb, $2)`),
    streamVersion: named('stream_version', `SELECT version FROM ${S}.es_streams WHERE name = $1`),
    placesOf: named(
      'places_of',
      `SELECT id, stream_name, version, position FROM ${S}.es_events WHERE id = ANY($1::text[])`,
    ),
    readForwards: named(
      'read_forwards',
      `SELECT ${columns} FROM ${S}.es_events WHERE stream_name = $1 AND version >= $2 ORDER BY version LIMIT $3`,
    ),
    readBackwards: named(
      'read_backwards',
      `SELECT ${columns} FROM ${S}.es_events WHERE stream_name = $1 AND version <= $2 ORDER BY version DESC LIMIT $3`,
    ),
    readAll: named('read_all', `SELECT ${columns} FROM ${S}.es_read_all($1, $2)`),
    head: named('head', `SELECT ${S}.es_head() AS head`),
    listStreams: named(
      'list_streams',
      `SELECT name, category, version, created_at, updated_at FROM ${S}.es_streams
       WHERE ($1::text IS NULL OR category = $1) AND name COLLATE "C" > $2 ORDER BY name COLLATE "C" LIMIT $3`,
    ),
    loadCheckpoint: named('load_checkpoint', `SELECT position FROM ${S}.es_checkpoints WHERE name = $1`),
    storeCheckpoint: named(
      'store_checkpoint',
      `INSERT INTO ${S}.es_checkpoints (name, position) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
    ),
    parkEvents: named(
      'park_events',
      `INSERT INTO ${S}.es_parked (${PARKED_COLUMNS})
       SELECT r->>0, (r->>1)::bigint, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, (r->>8)::int,
         (r->>9)::double precision, (r->>10)::int = 1
       FROM jsonb_array_elements($1::jsonb) AS r
       ON CONFLICT (subscription, position) DO UPDATE SET keys = excluded.keys, reason = excluded.reason,
         error = excluded.error, attempts = excluded.attempts, parked_at = excluded.parked_at,
         retry_requested = excluded.retry_requested`,
    ),
    listParked: named(
      'list_parked',
      `SELECT ${PARKED_COLUMNS} FROM ${S}.es_parked WHERE subscription = $1 AND position > $2
       ORDER BY position LIMIT $3`,
    ),
    removeParked: named(
      'remove_parked',
      `DELETE FROM ${S}.es_parked WHERE subscription = $1 AND ($2::bigint[] IS NULL OR position = ANY($2))`,
    ),
    requestParkedRetry: named(
      'request_parked_retry',
      `UPDATE ${S}.es_parked SET retry_requested = true
       WHERE subscription = $1 AND ($2::bigint[] IS NULL OR position = ANY($2))`,
    ),
    countParked: named(
      'count_parked',
      `SELECT subscription, count(*)::int AS parked FROM ${S}.es_parked GROUP BY subscription`,
    ),
    summarizeParked: named(
      'summarize_parked',
      `SELECT count(*)::int AS parked, count(*) FILTER (WHERE retry_requested)::int AS retry_requested
       FROM ${S}.es_parked WHERE subscription = $1`,
    ),
    loadSnapshot: named(
      'load_snapshot',
      `SELECT version, state, schema_version, taken_at FROM ${S}.es_snapshots WHERE stream_name = $1`,
    ),
    storeSnapshot: named(
      'store_snapshot',
      `INSERT INTO ${S}.es_snapshots (stream_name, version, state, schema_version, taken_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (stream_name) DO UPDATE SET version = excluded.version, state = excluded.state,
         schema_version = excluded.schema_version, taken_at = excluded.taken_at`,
    ),
  };
}
