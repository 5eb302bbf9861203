import { SQLITE_LIMIT, type SqliteDatabase } from '@stratus/sql';
import type { RecordedEvent } from '../backend.js';

/** An event as stored: its row, decoded once the first reader asks for it. */
export interface EventRow {
  position: number;
  stream_name: string;
  version: number;
  id: string;
  type: string;
  data: string;
  metadata: string;
  schema_version: number;
  recorded_at: number;
}

export function recorded(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    schemaVersion: row.schema_version,
    streamName: row.stream_name,
    streamVersion: row.version,
    globalPosition: row.position,
    recordedAt: row.recorded_at,
  };
}

/** Events kept at least (and at most twice as many): about a second of appends under heavy load. */
const KEPT = 8192;

interface Slot {
  readonly row: EventRow;
  event?: RecordedEvent;
}

/** The columns of EventRow, in its order. */
export const EVENT_COLUMNS =
  'position, stream_name, version, id, type, data, metadata, schema_version, recorded_at';

/** The events after a position (first parameter), at most a count of them (second), in order. */
export const READ_ALL_SQL = `SELECT ${EVENT_COLUMNS} FROM es_events WHERE position > ? ORDER BY position ${SQLITE_LIMIT}`;

/**
 * The events at the table's end, so that readers following the head (subscriptions, projection runners) get them
 * without a query, each decoded once for all of them: in a busy process every event is read by several readers right
 * after it is appended.
 *
 * The tail holds committed events only, at consecutive positions; committed events are never changed or deleted,
 * so a held event stays true. What this connection commits joins the tail as it commits; what other connections
 * (another thread or process) commit joins it with one query when a read or this connection's next append finds the
 * table's end beyond the tail, so under several writers the events are still read from the table once, not once per
 * reader. One tail per connection, shared by every store using it.
 */
export class RecentEvents {
  readonly #database: SqliteDatabase;
  #slots: Slot[] = [];
  /** Position of slots[0]. */
  #first = 0;
  /** Whether anyone reads through the tail: a connection that only appends keeps no gaps filled. */
  #followed = false;

  private constructor(database: SqliteDatabase) {
    this.#database = database;
  }

  static #byDatabase = new WeakMap<SqliteDatabase, RecentEvents>();

  static of(database: SqliteDatabase): RecentEvents {
    let tail = RecentEvents.#byDatabase.get(database);
    if (tail === undefined) {
      tail = new RecentEvents(database);
      RecentEvents.#byDatabase.set(database, tail);
    }
    return tail;
  }

  /**
   * Adds rows this connection just committed, in position order. Rows between the tail and them were committed by
   * other connections before this commit began (positions are taken under the write lock), so they are read to
   * close the gap, once readers follow the tail. An append that joined a transaction begun outside SqliteDatabase is not known to be committed
   * (its end is out of sight) and is left to the table.
   */
  add(rows: readonly EventRow[]): void {
    if (rows.length === 0 || this.#database.inTransaction) return;
    const position = (rows[0] as EventRow).position;
    if (!this.#followed || !this.#extendTo(position - 1)) {
      this.#slots = [];
      this.#first = position;
    }
    this.#push(rows);
  }

  /**
   * Up to `maxCount` events after `after`, when the tail can answer alone (it starts at or before `after + 1` and,
   * extended by what other connections committed since, is the table's end); undefined when the table must be read.
   */
  read(after: number, maxCount: number): RecordedEvent[] | undefined {
    this.#followed = true;
    if (this.#slots.length === 0 || after + 1 < this.#first) return undefined;
    const head = this.#database
      .prepare('SELECT max(position) AS head FROM es_events')
      .get<{ head: number | null }>()?.head;
    // Inside an open transaction the table's end may be this connection's own uncommitted rows.
    if (head == null || this.#database.inTransaction || !this.#extendTo(head)) return undefined;
    const start = after + 1 - this.#first;
    if (start < 0 || start > this.#slots.length) return undefined;
    const end = maxCount < 0 ? this.#slots.length : Math.min(this.#slots.length, start + maxCount);
    const events: RecordedEvent[] = [];
    for (let i = start; i < end; i++) {
      const slot = this.#slots[i] as Slot;
      slot.event ??= recorded(slot.row);
      events.push(slot.event);
    }
    return events;
  }

  /**
   * Makes the tail end at `position` by reading the committed rows after it; false when it cannot (it is empty,
   * already beyond, or too far behind to be worth keeping).
   */
  #extendTo(position: number): boolean {
    if (this.#slots.length === 0) return false;
    const last = this.#first + this.#slots.length - 1;
    if (position === last) return true;
    if (position < last || position - last > KEPT) return false;
    const rows = this.#database.prepare(READ_ALL_SQL).all<EventRow>(last, position - last);
    if (rows.length !== position - last || (rows.at(-1) as EventRow).position !== position) return false;
    this.#push(rows);
    return true;
  }

  #push(rows: readonly EventRow[]): void {
    for (const row of rows) this.#slots.push({ row });
    if (this.#slots.length > 2 * KEPT) {
      this.#slots = this.#slots.slice(-KEPT);
      this.#first = (this.#slots[0] as Slot).row.position;
    }
  }
}
