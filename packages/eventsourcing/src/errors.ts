import { StratusError } from '@stratus/core';
import type { ExpectedVersion } from './backend.js';

/** The stream was not at the version the append expected; nothing was written. */
export class WrongExpectedVersionError extends StratusError {
  readonly streamName: string;
  readonly expected: ExpectedVersion;
  /** The stream's version when the append was refused (0: no stream). */
  readonly actual: number;
  constructor(streamName: string, expected: ExpectedVersion, actual: number) {
    super(
      'ERR_STRATUS_WRONG_EXPECTED_VERSION',
      `Stream "${streamName}" is at version ${actual}, the append expected ${typeof expected === 'number' ? `version ${expected}` : `"${expected}"`}`,
    );
    this.streamName = streamName;
    this.expected = expected;
    this.actual = actual;
  }
}

/** A stream name that is empty, too long or holds control characters. */
export class InvalidStreamNameError extends StratusError {
  readonly streamName: unknown;
  constructor(streamName: unknown, reason: string) {
    super('ERR_STRATUS_INVALID_STREAM_NAME', `Invalid stream name ${JSON.stringify(streamName)}: ${reason}`);
    this.streamName = streamName;
  }
}

/** An event given to append is malformed (no type, data that is not JSON, bad id or metadata). */
export class InvalidEventError extends StratusError {
  /** Which event of the batch (0-based) and which field. */
  readonly index: number;
  readonly field: string;
  constructor(index: number, field: string, reason: string) {
    super('ERR_STRATUS_INVALID_EVENT', `Invalid event #${index} ${field}: ${reason}`);
    this.index = index;
    this.field = field;
  }
}

/** An event type (or one of its schema versions) that the registry does not know. */
export class UnknownEventTypeError extends StratusError {
  readonly type: string;
  readonly schemaVersion: number | undefined;
  constructor(type: string, schemaVersion?: number) {
    super(
      'ERR_STRATUS_UNKNOWN_EVENT_TYPE',
      schemaVersion === undefined
        ? `Unknown event type "${type}"`
        : `No upcaster takes event type "${type}" from schema version ${schemaVersion}`,
    );
    this.type = type;
    this.schemaVersion = schemaVersion;
  }
}

/**
 * An event id is already stored, but not as part of the same append: in another stream, or at another place in
 * this one. (Appending exactly the same events again is not an error: it is recognised and not repeated.)
 */
export class DuplicateEventIdError extends StratusError {
  readonly eventId: string;
  readonly streamName: string;
  constructor(eventId: string, streamName: string) {
    super(
      'ERR_STRATUS_DUPLICATE_EVENT_ID',
      `Event id ${eventId} is already stored (in stream "${streamName}") by a different append`,
    );
    this.eventId = eventId;
    this.streamName = streamName;
  }
}

/** The event store was closed. */
export class EventStoreClosedError extends StratusError {
  constructor() {
    super('ERR_STRATUS_EVENT_STORE_CLOSED', 'The event store is closed');
  }
}

/** A subscription with `onPoison: 'stop'` stopped: its handler failed on one event `attempts` times. */
export class PoisonEventError extends StratusError {
  readonly subscription: string;
  readonly position: number;
  readonly attempts: number;
  constructor(subscription: string, position: number, attempts: number, cause: unknown) {
    super(
      'ERR_STRATUS_POISON_EVENT',
      `Subscription "${subscription}" stopped: its handler failed ${attempts} times on the event at position ${position}`,
      { cause },
    );
    this.subscription = subscription;
    this.position = position;
    this.attempts = attempts;
  }
}
