import { assertDuration, uuidv7 } from '@stratus/core';
import type { OutgoingMessage } from './backend.js';
import type { Codec } from './codec.js';
import { InvalidMessageError } from './errors.js';
import { assertHeaders, assertMessageId, assertOptionalText, assertPriority } from './options.js';

/** What a producer may say about a message besides its body. */
export interface SendOptions {
  /** Unique id, the duplicate-detection key; default a UUIDv7. Reuse it when you resend the same message. */
  id?: string;
  correlationId?: string;
  replyTo?: string;
  subject?: string;
  headers?: Record<string, string>;
  /** Required on queues with sessions: messages of one session are processed in order, one at a time. */
  sessionId?: string;
  /** 0 (default, lowest) to 9 (highest). */
  priority?: number;
  /** Overrides the codec's content type (with a Uint8Array body). */
  contentType?: string;
  /** Deliver no sooner than this many milliseconds from now. */
  delayMs?: number;
  /** Deliver no sooner than this time (epoch ms or Date). */
  deliverAt?: number | Date;
  /** Dead-letter the message as expired if it was not delivered within this many milliseconds. */
  ttlMs?: number;
}

export interface MessageToSend<T> extends SendOptions {
  body: T;
}

/** Hooks a claim check plugs into: large payloads leave the message and come back on receipt. */
export interface PayloadOffloader {
  /** Stores `body` elsewhere when it is large enough; returns the small body and headers to send instead. */
  offload(
    body: Uint8Array,
    messageId: string,
  ): Promise<{ body: Uint8Array; headers: Record<string, string> } | undefined>;
  /** The original payload of a received message (the body itself when it was not offloaded). */
  restore(headers: Readonly<Record<string, string>> | undefined, body: Uint8Array): Promise<Uint8Array>;
  /** Deletes an offloaded payload once its message is completed (no-op otherwise). */
  release(headers: Readonly<Record<string, string>> | undefined): Promise<unknown>;
}

export interface OutgoingContext {
  readonly codec: Codec;
  readonly now: number;
}

/** Validates and encodes one message (synchronously, so it can run inside a database transaction). */
export function buildOutgoing<T>(message: MessageToSend<T>, context: OutgoingContext): OutgoingMessage {
  if (typeof message !== 'object' || message === null)
    throw new InvalidMessageError('message', 'expected an object');
  const id = message.id ?? uuidv7();
  assertMessageId(id);
  assertOptionalText('correlationId', message.correlationId);
  assertOptionalText('replyTo', message.replyTo);
  assertOptionalText('subject', message.subject);
  assertOptionalText('sessionId', message.sessionId, 256);
  assertOptionalText('contentType', message.contentType, 256);
  assertHeaders(message.headers);
  if (message.priority !== undefined) assertPriority(message.priority);
  const { now } = context;
  let availableAt: number | undefined;
  if (message.delayMs !== undefined) {
    assertTime('delayMs', () => assertDuration('delayMs', message.delayMs));
    availableAt = now + message.delayMs;
  }
  if (message.deliverAt !== undefined) {
    const at = message.deliverAt instanceof Date ? message.deliverAt.getTime() : message.deliverAt;
    if (typeof at !== 'number' || !Number.isFinite(at))
      throw new InvalidMessageError('deliverAt', 'expected a Date or epoch milliseconds');
    availableAt = Math.max(availableAt ?? at, at);
  }
  let expiresAt: number | undefined;
  if (message.ttlMs !== undefined) {
    assertTime('ttlMs', () => assertDuration('ttlMs', message.ttlMs, { allowZero: false }));
    expiresAt = now + message.ttlMs;
  }

  let encoded: { bytes: Uint8Array; contentType: string };
  try {
    encoded = context.codec.encode(message.body);
  } catch (error) {
    throw new InvalidMessageError('body', error instanceof Error ? error.message : String(error));
  }
  return {
    id,
    contentType: message.contentType ?? encoded.contentType,
    correlationId: message.correlationId,
    replyTo: message.replyTo,
    subject: message.subject,
    headers: message.headers,
    sessionId: message.sessionId,
    priority: message.priority ?? 0,
    body: encoded.bytes,
    availableAt,
    expiresAt,
  };
}

/** Moves a large body to the claim check, leaving a reference in the message. */
export async function offloadOutgoing(
  message: OutgoingMessage,
  offloader: PayloadOffloader | undefined,
): Promise<OutgoingMessage> {
  const offloaded = await offloader?.offload(message.body, message.id);
  if (offloaded === undefined) return message;
  return { ...message, body: offloaded.body, headers: { ...message.headers, ...offloaded.headers } };
}

function assertTime(field: string, check: () => void): void {
  try {
    check();
  } catch (error) {
    throw new InvalidMessageError(field, error instanceof Error ? error.message : String(error));
  }
}
