// The memory backend's stored message and its mapping to the port's StoredMessage and DeliveredMessage.
import type { DeliveredMessage, MessageState, OutgoingMessage, StoredMessage } from '../backend.js';

/** A stored message; mutated in place as it moves between states. `version` invalidates stale heap entries. */
export interface MessageRecord {
  readonly sequence: number;
  readonly message: OutgoingMessage;
  readonly priority: number;
  readonly enqueuedAt: number;
  readonly expiresAt: number | undefined;
  readonly sessionId: string | undefined;
  state: MessageState;
  availableAt: number;
  rank: number;
  deliveryCount: number;
  lockToken: string | undefined;
  lockedUntil: number;
  version: number;
  deadLetterReason?: string;
  deadLetterDescription?: string | undefined;
  deadLetteredAt?: number;
}

export function insertBySequence(list: MessageRecord[], record: MessageRecord): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as MessageRecord).sequence > record.sequence) i--;
  list.splice(i, 0, record);
}

export function stored(record: MessageRecord): StoredMessage {
  const m = record.message;
  return {
    id: m.id,
    contentType: m.contentType,
    correlationId: m.correlationId,
    replyTo: m.replyTo,
    subject: m.subject,
    headers: m.headers,
    sessionId: m.sessionId,
    priority: record.priority,
    body: m.body.slice(),
    sequence: record.sequence,
    enqueuedAt: record.enqueuedAt,
    availableAt: record.availableAt,
    expiresAt: record.expiresAt,
    deliveryCount: record.deliveryCount,
    state: record.state,
  };
}

export function delivered(record: MessageRecord): DeliveredMessage {
  return Object.assign(stored(record), {
    lockToken: record.lockToken as string,
    lockedUntil: record.lockedUntil,
  });
}
