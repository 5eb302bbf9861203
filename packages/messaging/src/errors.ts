import { StratusError } from '@stratus/core';

export class UnknownQueueError extends StratusError {
  readonly queue: string;
  constructor(queue: string) {
    super('ERR_STRATUS_UNKNOWN_QUEUE', `Queue "${queue}" does not exist`);
    this.queue = queue;
  }
}

export class UnknownTopicError extends StratusError {
  readonly topic: string;
  constructor(topic: string) {
    super('ERR_STRATUS_UNKNOWN_TOPIC', `Topic "${topic}" does not exist`);
    this.topic = topic;
  }
}

/** The encoded body is larger than the queue accepts and no claim check is configured to carry it. */
export class MessageTooLargeError extends StratusError {
  readonly queue: string;
  readonly bytes: number;
  readonly maxBytes: number;
  constructor(queue: string, bytes: number, maxBytes: number) {
    super(
      'ERR_STRATUS_MESSAGE_TOO_LARGE',
      `Message of ${bytes} bytes exceeds the ${maxBytes}-byte limit of queue "${queue}"; configure a claim check to send large payloads`,
    );
    this.queue = queue;
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/** A message given to send or publish is malformed (bad id, priority, header, session id...). */
export class InvalidMessageError extends StratusError {
  readonly field: string;
  constructor(field: string, message: string) {
    super('ERR_STRATUS_INVALID_MESSAGE', `Invalid message ${field}: ${message}`);
    this.field = field;
  }
}

/** The lock of a delivery expired and the message was delivered again; this delivery can no longer settle it. */
export class MessageLockLostError extends StratusError {
  readonly queue: string;
  readonly messageId: string;
  constructor(queue: string, messageId: string) {
    super(
      'ERR_STRATUS_LOCK_LOST',
      `The lock on message "${messageId}" of queue "${queue}" was lost (it expired and the message was delivered again)`,
    );
    this.queue = queue;
    this.messageId = messageId;
  }
}

/** A received body could not be decoded with its content type. Consumers dead-letter such messages at once. */
export class MessageDecodeError extends StratusError {
  readonly contentType: string | undefined;
  constructor(contentType: string | undefined, cause: unknown) {
    super(
      'ERR_STRATUS_MESSAGE_DECODE',
      `Could not decode a message body of content type "${contentType ?? 'none'}"`,
      {
        cause,
      },
    );
    this.contentType = contentType;
  }
}

/** complete, abandon or dead-letter was called on a delivery that was already settled. */
export class MessageAlreadySettledError extends StratusError {
  readonly messageId: string;
  constructor(queue: string, messageId: string) {
    super('ERR_STRATUS_ALREADY_SETTLED', `Message "${messageId}" of queue "${queue}" was already settled`);
    this.messageId = messageId;
  }
}

/**
 * A consumer with `onPoison: 'stop'` dead-lettered a message its handler failed on in every delivery, then stopped:
 * its `stopped` rejects with this. The message is in the dead-letter queue (resend or purge it there); `cause` is
 * the handler's last error.
 */
export class PoisonMessageError extends StratusError {
  readonly queue: string;
  readonly messageId: string;
  readonly sequence: number;
  readonly sessionId: string | undefined;
  readonly deliveryCount: number;
  constructor(
    queue: string,
    message: {
      readonly id: string;
      readonly sequence: number;
      readonly sessionId: string | undefined;
      readonly deliveryCount: number;
    },
    cause: unknown,
  ) {
    const session = message.sessionId === undefined ? '' : ` of session "${message.sessionId}"`;
    super(
      'ERR_STRATUS_POISON_MESSAGE',
      `The consumer of queue "${queue}" stopped: its handler failed on message "${message.id}" (sequence ${message.sequence}${session}) in all ${message.deliveryCount} deliveries; the message is in the dead-letter queue`,
      { cause },
    );
    this.queue = queue;
    this.messageId = message.id;
    this.sequence = message.sequence;
    this.sessionId = message.sessionId;
    this.deliveryCount = message.deliveryCount;
  }
}
