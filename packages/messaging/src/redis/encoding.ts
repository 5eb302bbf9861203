// Encoding messages as the Redis scripts' arguments: routing JSON, payloads, and payloads packed into blobs.
import type { OutgoingMessage } from '../backend.js';

/** A script argument. */
export type Argument = string | Buffer;

export function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The script arguments of a batch: a JSON array of [id, availableAt, expiresAt, priority, sessionId] (false when
 * absent), then one payload per message: the properties as JSON (which never holds a raw NUL), a NUL byte, the
 * body.
 */
export function pushMessages(args: Argument[], messages: readonly OutgoingMessage[]): void {
  const routing = messages.map((m) => [
    m.id,
    m.availableAt ?? false,
    m.expiresAt ?? false,
    m.priority ?? 0,
    m.sessionId ?? false,
  ]);
  args.push(JSON.stringify(routing));
  for (const message of messages) {
    const properties = propertiesOf(message);
    const length = Buffer.byteLength(properties);
    const payload = Buffer.allocUnsafe(length + 1 + message.body.byteLength);
    writePayload(payload, 0, properties, message.body);
    args.push(payload);
  }
}

/** How long a blob the send script has not claimed lives: only a failed send leaves one behind. */
export const UNCLAIMED_BLOB_TTL_MS = 5 * 60_000;

/**
 * A blob holds at most this many bytes (or one payload, when larger): far from Redis' 512 MB string limit, and
 * one slow message keeps at most this much memory alive.
 */
const BLOB_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The routing JSON of the send script in blob mode (as pushMessages, with each payload's length as a sixth
 * element), pushed to args; returns the payloads packed back to back into blobs, in order.
 */
export function packMessages(
  args: Argument[],
  messages: readonly OutgoingMessage[],
): { pack: Buffer; count: number }[] {
  const properties = messages.map(propertiesOf);
  const lengths = messages.map((m, i) => Buffer.byteLength(properties[i] as string) + 1 + m.body.byteLength);
  args.push(
    JSON.stringify(
      messages.map((m, i) => [
        m.id,
        m.availableAt ?? false,
        m.expiresAt ?? false,
        m.priority ?? 0,
        m.sessionId ?? false,
        lengths[i],
      ]),
    ),
  );
  const packs: { pack: Buffer; count: number }[] = [];
  let start = 0;
  let size = 0;
  for (let i = 0; i <= messages.length; i++) {
    const length = lengths[i];
    if (i > start && (length === undefined || size + length > BLOB_MAX_BYTES)) {
      const pack = Buffer.allocUnsafe(size);
      let offset = 0;
      for (let j = start; j < i; j++) {
        offset = writePayload(pack, offset, properties[j] as string, (messages[j] as OutgoingMessage).body);
      }
      packs.push({ pack, count: i - start });
      start = i;
      size = 0;
    }
    size += length ?? 0;
  }
  return packs;
}

/** Writes a payload (the properties as JSON, a NUL byte, the body) at offset; returns the offset after it. */
function writePayload(target: Buffer, offset: number, properties: string, body: Uint8Array): number {
  const end = offset + target.write(properties, offset, 'utf8');
  target[end] = 0;
  target.set(body, end + 1);
  return end + 1 + body.byteLength;
}

function propertiesOf(message: OutgoingMessage): string {
  return JSON.stringify({
    id: message.id,
    contentType: message.contentType,
    correlationId: message.correlationId,
    replyTo: message.replyTo,
    subject: message.subject,
    headers: message.headers,
    sessionId: message.sessionId,
    priority: message.priority,
  });
}
