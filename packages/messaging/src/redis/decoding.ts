// Decoding the Redis scripts' replies: state records, payloads (inline or in blobs) and the messages they make.
import type {
  DeadLetter,
  DeliveredMessage,
  MessageProperties,
  MessageState,
  ReceiveResult,
  StoredMessage,
} from '../backend.js';
import { RECORD_STRINGS_OFFSET, STATE_NAMES } from './scripts.js';

// Byte offsets in a state record (RECORD_FORMAT).
const STATE = 0;
const PRIORITY = 1;
const HAS_DESCRIPTION = 3;
const AVAILABLE_AT = 4;
const DELIVERY_COUNT = 12;
const LOCKED_UNTIL = 20;
const EXPIRES_AT = 28;
const ENQUEUED_AT = 36;
const DEAD_LETTERED_AT = 44;

/** The byte offset after the record's four strings: where a blob reference starts, if it has one. */
function recordEnd(record: Buffer): number {
  let offset = RECORD_STRINGS_OFFSET;
  for (let i = 0; i < 4; i++) offset += 4 + record.readUInt32LE(offset);
  return offset;
}

/**
 * Reads the payload slots of a reply (payload_writer in scripts.ts), in reply order: a Buffer is a payload, or,
 * for a message whose record holds a blob reference, a chunk of blob bytes starting with its payload; 0 is a
 * payload further on in the last chunk. The reference (BLOB_REF_FORMAT) says where: offset and length in the blob.
 */
class PayloadReader {
  #chunk: Buffer = Buffer.alloc(0);
  /** The blob offset of the chunk's first byte. */
  #start = 0;

  read(record: Buffer, slot: Buffer | number): Buffer {
    const end = recordEnd(record);
    if (end >= record.length) return slot as Buffer;
    const offset = record.readUInt32LE(end);
    const length = record.readUInt32LE(end + 4);
    if (typeof slot !== 'number') {
      this.#chunk = slot;
      this.#start = offset;
    }
    return this.#chunk.subarray(offset - this.#start, offset - this.#start + length);
  }
}

/** One of the record's strings: 0 lock token, 1 session id, 2 dead-letter reason, 3 description. */
function recordString(record: Buffer, index: number): string {
  let offset = RECORD_STRINGS_OFFSET;
  for (let i = 0; i < index; i++) offset += 4 + record.readUInt32LE(offset);
  const length = record.readUInt32LE(offset);
  return record.toString('utf8', offset + 4, offset + 4 + length);
}

/** What receive_messages returns (see scripts.ts), from reply[from] on. */
export type ReceiveReply = (Buffer | number | null)[];

export function received(reply: ReceiveReply, from: number): ReceiveResult {
  const messages: DeliveredMessage[] = [];
  const payloads = new PayloadReader();
  for (let i = from + 1; i < reply.length; i += 3) {
    const record = reply[i + 1] as Buffer;
    messages.push(
      Object.assign(
        storedMessage(reply[i] as number, record, payloads.read(record, reply[i + 2] as Buffer | number)),
        {
          lockToken: recordString(record, 0),
          lockedUntil: record.readDoubleLE(LOCKED_UNTIL),
        },
      ),
    );
  }
  const due = reply[from] as Buffer | null;
  return { messages, nextDueAt: due === null ? undefined : Number(due.toString('latin1')) };
}

function storedMessage(sequence: number, record: Buffer, payload: Buffer): StoredMessage {
  const separator = payload.indexOf(0);
  const properties = JSON.parse(payload.toString('utf8', 0, separator)) as MessageProperties;
  const expiresAt = record.readDoubleLE(EXPIRES_AT);
  return {
    id: properties.id,
    contentType: properties.contentType,
    correlationId: properties.correlationId,
    replyTo: properties.replyTo,
    subject: properties.subject,
    headers: properties.headers,
    sessionId: properties.sessionId,
    priority: record[PRIORITY] as number,
    body: new Uint8Array(payload.subarray(separator + 1)),
    sequence,
    enqueuedAt: record.readDoubleLE(ENQUEUED_AT),
    availableAt: record.readDoubleLE(AVAILABLE_AT),
    expiresAt: expiresAt === Number.POSITIVE_INFINITY ? undefined : expiresAt,
    deliveryCount: record.readDoubleLE(DELIVERY_COUNT),
    state: STATE_NAMES[record[STATE] as number] as MessageState,
  };
}

/** The messages of a peek reply: sequence, record and payload slot for each. */
export function storedMessages(reply: readonly (Buffer | number)[]): StoredMessage[] {
  const messages: StoredMessage[] = [];
  const payloads = new PayloadReader();
  for (let i = 0; i < reply.length; i += 3) {
    const record = reply[i + 1] as Buffer;
    messages.push(
      storedMessage(reply[i] as number, record, payloads.read(record, reply[i + 2] as Buffer | number)),
    );
  }
  return messages;
}

/**
 * The dead letters of a listDeadLetters reply: a string of one '1' (holds its session) or '0' per dead letter, then
 * sequence, record and payload slot for each.
 */
export function deadLetters(reply: readonly (Buffer | number)[]): DeadLetter[] {
  const letters: DeadLetter[] = [];
  const payloads = new PayloadReader();
  const holds = (reply[0] as Buffer).toString('latin1');
  for (let i = 1; i < reply.length; i += 3) {
    const record = reply[i + 1] as Buffer;
    letters.push(
      Object.assign(
        storedMessage(reply[i] as number, record, payloads.read(record, reply[i + 2] as Buffer | number)),
        {
          deadLetterReason: recordString(record, 2),
          deadLetterDescription: record[HAS_DESCRIPTION] === 1 ? recordString(record, 3) : undefined,
          deadLetteredAt: record.readDoubleLE(DEAD_LETTERED_AT),
          holdsSession: holds[letters.length] === '1',
        },
      ),
    );
  }
  return letters;
}
