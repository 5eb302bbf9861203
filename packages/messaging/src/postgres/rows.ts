// The PostgreSQL backend's rows and columns, and their mapping to and from the port's types.
import type {
  DeliveredMessage,
  MessageState,
  OutgoingMessage,
  QueueSettings,
  ReceiveResult,
  StoredMessage,
} from '../backend.js';

/** The properties kept as JSON beside the body. */
export interface Props {
  contentType?: string;
  correlationId?: string;
  replyTo?: string;
  subject?: string;
  headers?: Record<string, string>;
  sessionId?: string;
}

export interface MessageRow {
  sequence: string;
  id: string;
  body: Buffer;
  props: Props | null;
  priority: number;
  enqueued_at: number;
  available_at: number;
  expires_at: number | null;
  delivery_count: number;
}
export interface DeliveredRow extends MessageRow {
  slot: number;
  lock_token: string;
  locked_until: number;
}
/** A slot that got nothing: only when to look again. */
export interface NextDueRow {
  slot: number;
  sequence: null;
  next_due_at: number;
}
export interface ListedRow extends MessageRow {
  state: MessageState;
  dead_reason: string | null;
  dead_description: string | null;
  dead_at: number | null;
  holds_session: boolean;
}
export interface QueueRow {
  lock_duration_ms: number;
  max_delivery_count: number;
  duplicate_window_ms: number;
  default_ttl_ms: number | null;
  max_message_bytes: number;
  priority_policy: 'strict' | 'weighted';
  aging_ms: number | null;
  sessions: boolean;
  on_session_dead_letter: QueueSettings['onSessionDeadLetter'];
}

/**
 * The messages as parallel arrays, one per column; the bodies as one buffer with each one's start (1-based) and
 * length (see byteaArray in statements.ts).
 */
export function messageColumns(messages: readonly OutgoingMessage[]) {
  const bodyStarts: number[] = [];
  const bodyLengths: number[] = [];
  let start = 1;
  for (const { body } of messages) {
    bodyStarts.push(start);
    bodyLengths.push(body.byteLength);
    start += body.byteLength;
  }
  return {
    ids: messages.map((m) => m.id),
    bodies: Buffer.concat(messages.map((m) => m.body)),
    bodyStarts,
    bodyLengths,
    props: messages.map(propsJson),
    priorities: messages.map((m) => m.priority ?? null),
    sessionIds: messages.map((m) => m.sessionId ?? null),
    availableAts: messages.map((m) => m.availableAt ?? null),
    expiresAts: messages.map((m) => m.expiresAt ?? null),
  };
}

function propsJson(message: OutgoingMessage): string | null {
  const props: Props = {};
  let any = false;
  for (const key of ['contentType', 'correlationId', 'replyTo', 'subject', 'sessionId'] as const) {
    const value = message[key];
    if (value !== undefined) {
      props[key] = value;
      any = true;
    }
  }
  if (message.headers !== undefined) {
    props.headers = message.headers as Record<string, string>;
    any = true;
  }
  return any ? JSON.stringify(props) : null;
}

/** The rows of a receive for `slots` callers, as each caller's result. */
export function receiveResults(rows: readonly (DeliveredRow | NextDueRow)[], slots: number): ReceiveResult[] {
  const results = Array.from(
    { length: slots },
    (): ReceiveResult => ({ messages: [], nextDueAt: undefined }),
  );
  for (const row of rows) {
    const slot = row.slot - 1;
    if (row.sequence === null) results[slot] = { messages: [], nextDueAt: row.next_due_at };
    else results[slot]?.messages.push(delivered(row));
  }
  return results;
}

export function stored(row: MessageRow, state: MessageState): StoredMessage {
  const props = row.props ?? {};
  return {
    id: row.id,
    contentType: props.contentType,
    correlationId: props.correlationId,
    replyTo: props.replyTo,
    subject: props.subject,
    headers: props.headers,
    sessionId: props.sessionId,
    priority: row.priority,
    body: row.body,
    sequence: Number(row.sequence),
    enqueuedAt: row.enqueued_at,
    availableAt: row.available_at,
    expiresAt: row.expires_at ?? undefined,
    deliveryCount: row.delivery_count,
    state,
  };
}

export function delivered(row: DeliveredRow): DeliveredMessage {
  return Object.assign(stored(row, 'locked'), {
    lockToken: `${row.sequence}:${row.lock_token}`,
    lockedUntil: row.locked_until,
  });
}

export function queueSettings(row: QueueRow): QueueSettings {
  return {
    lockDurationMs: row.lock_duration_ms,
    maxDeliveryCount: row.max_delivery_count,
    duplicateWindowMs: row.duplicate_window_ms,
    defaultTtlMs: row.default_ttl_ms ?? undefined,
    maxMessageBytes: row.max_message_bytes,
    priority:
      row.priority_policy === 'weighted'
        ? { policy: 'weighted', agingMs: row.aging_ms as number }
        : { policy: 'strict' },
    sessions: row.sessions,
    onSessionDeadLetter: row.on_session_dead_letter,
  };
}
