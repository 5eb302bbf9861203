import type { ParkedEvent, ParkedReason } from './backend.js';

/** The columns of the SQL backends' `es_parked` table, in the order `parkedParameters` gives them. */
export const PARKED_COLUMNS =
  'subscription, position, event_id, event_type, stream_name, keys, reason, error, attempts, parked_at, retry_requested';

/** A row of `es_parked` as the drivers return it (PostgreSQL gives bigints as text, SQLite booleans as 0/1). */
export interface ParkedRow {
  subscription: string;
  position: number | string;
  event_id: string;
  event_type: string;
  stream_name: string;
  /** JSON text of an array of strings. */
  keys: string;
  reason: string;
  error: string;
  attempts: number;
  parked_at: number;
  retry_requested: number | boolean;
}

export function parkedFromRow(row: ParkedRow): ParkedEvent {
  return {
    subscription: row.subscription,
    position: Number(row.position),
    eventId: row.event_id,
    eventType: row.event_type,
    streamName: row.stream_name,
    keys: JSON.parse(row.keys) as string[],
    reason: row.reason as ParkedReason,
    error: row.error,
    attempts: row.attempts,
    parkedAt: row.parked_at,
    retryRequested: Boolean(row.retry_requested),
  };
}

/** The values of PARKED_COLUMNS for one event (the flag as 1 or 0, which both SQLite and PostgreSQL take). */
export function parkedParameters(event: ParkedEvent): (string | number)[] {
  return [
    event.subscription,
    event.position,
    event.eventId,
    event.eventType,
    event.streamName,
    JSON.stringify(event.keys),
    event.reason,
    event.error,
    event.attempts,
    event.parkedAt,
    event.retryRequested ? 1 : 0,
  ];
}
