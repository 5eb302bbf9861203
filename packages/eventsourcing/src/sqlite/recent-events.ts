import type { SqliteDatabase } from '@stratus/messaging';
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

/**
 * The events this connection committed last, so that readers following the head (subscriptions, projection runners)
 * get them without a query, each decoded once for all of them: in a busy process every event is read by several
 * readers right after it is appended.
 *
 * The tail is trusted only while it provably equals the table's end: it holds consecutive positions ending at the
 * table's highest position (checked per read: one cheap rowid lookup), and no other connection committed since it
 * was last checked (`PRAGMA data_version` changes when one did). Events another connection (another process)
 * appends are read from the table as before. One tail per connection, shared by every store using it.
 */
export class RecentEvents {
  readonly #database: SqliteDatabase;
  #slots: Slot[] = [];
  /** Position of slots[0]. */
  #first = 0;
  #dataVersion: number;

  private constructor(database: SqliteDatabase) {
    this.#database = database;
    this.#dataVersion = this.#readDataVersion();
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

  /** Adds committed rows, in position order; a row that does not follow the tail starts a new one. */
  add(rows: readonly EventRow[]): void {
    for (const row of rows) {
      if (this.#slots.length === 0 || row.position !== this.#first + this.#slots.length) {
        // A new tail claims nothing before its first row; what other connections commit from now on shows in
        // data_version (and what they committed already, after this row, in the head).
        this.#slots = [];
        this.#first = row.position;
        this.#dataVersion = this.#readDataVersion();
      }
      this.#slots.push({ row });
    }
    if (this.#slots.length > 2 * KEPT) {
      this.#slots = this.#slots.slice(-KEPT);
      this.#first = (this.#slots[0] as Slot).row.position;
    }
  }

  /**
   * Up to `maxCount` events after `after`, when the tail can answer alone (it starts at or before `after + 1` and is
   * the table's end); undefined when the table must be read.
   */
  read(after: number, maxCount: number): RecordedEvent[] | undefined {
    const start = after + 1 - this.#first;
    if (this.#slots.length === 0 || start < 0 || start > this.#slots.length) return undefined;
    const dataVersion = this.#readDataVersion();
    const head = this.#database
      .prepare('SELECT max(position) AS head FROM es_events')
      .get<{ head: number }>()?.head;
    if (dataVersion !== this.#dataVersion || head !== this.#first + this.#slots.length - 1) {
      // Another connection wrote, or this one rolled back what the tail holds: start again from the next append.
      this.#dataVersion = dataVersion;
      this.#slots = [];
      return undefined;
    }
    const end = maxCount < 0 ? this.#slots.length : Math.min(this.#slots.length, start + maxCount);
    const events: RecordedEvent[] = [];
    for (let i = start; i < end; i++) {
      const slot = this.#slots[i] as Slot;
      slot.event ??= recorded(slot.row);
      events.push(slot.event);
    }
    return events;
  }

  #readDataVersion(): number {
    return this.#database.prepare('PRAGMA data_version').get<{ data_version: number }>()?.data_version ?? 0;
  }
}
