// Mapping the SQLite backend's rows to the port's types, and reading lock tokens and due times from them.
import type { OutgoingMessage, StoredMessage } from '../backend.js';
import type { DueRow, MessageRow, RetainedRow } from './statements.js';

/** What settling a locked message needs to know of it. */
export interface LockedRow {
  sequence: number;
  delivery_count: number;
  priority: number;
  session: string | null;
}

/** When the next scheduled message falls due or lock expires; undefined when there is none. */
export function earliest(due: DueRow): number | undefined {
  if (due.scheduled === null) return due.locked ?? undefined;
  return due.locked === null ? due.scheduled : Math.min(due.scheduled, due.locked);
}

/** The message a lock token was issued for; undefined for a string that is not one of our tokens. */
export function tokenSequence(token: string): number | undefined {
  const dot = token.indexOf('.');
  const sequence = dot > 0 ? Number(token.slice(0, dot)) : Number.NaN;
  return Number.isSafeInteger(sequence) ? sequence : undefined;
}

export function stored(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    contentType: row.content_type ?? undefined,
    correlationId: row.correlation_id ?? undefined,
    replyTo: row.reply_to ?? undefined,
    subject: row.subject ?? undefined,
    headers: row.headers === null ? undefined : (JSON.parse(row.headers) as Record<string, string>),
    sessionId: row.session_id ?? undefined,
    priority: row.priority,
    body: row.body,
    sequence: row.sequence,
    enqueuedAt: row.enqueued_at,
    availableAt: row.available_at,
    expiresAt: row.expires_at ?? undefined,
    deliveryCount: row.delivery_count,
    state: row.state,
  };
}

export function retainedMessage(row: RetainedRow): OutgoingMessage {
  return {
    id: row.id,
    body: row.body,
    availableAt: row.available_at ?? undefined,
    expiresAt: row.expires_at ?? undefined,
    priority: row.priority ?? undefined,
    sessionId: row.session_id ?? undefined,
    contentType: row.content_type ?? undefined,
    correlationId: row.correlation_id ?? undefined,
    replyTo: row.reply_to ?? undefined,
    subject: row.subject ?? undefined,
    headers: row.headers === null ? undefined : (JSON.parse(row.headers) as Record<string, string>),
  };
}
