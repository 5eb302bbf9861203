import {
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  type StratusEvent,
  systemClock,
  uuidv7,
} from '@stratus/core';
import type {
  AppendResult,
  EventMetadata,
  EventStoreBackend,
  EventToStore,
  ExpectedVersion,
  ListParkedQuery,
  ListStreamsQuery,
  ParkedEvent,
  ParkedSelection,
  ReadAllQuery,
  ReadStreamQuery,
  RecordedEvent,
  StreamInfo,
} from './backend.js';
import { InvalidEventError, InvalidStreamNameError, WrongExpectedVersionError } from './errors.js';
import type { EventTypes } from './event-types.js';
import { assertParkedSelection } from './parking.js';
import { Subscription, type SubscriptionOptions } from './subscription.js';

/** An event to append. */
export interface NewEvent<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
  /** Unique id (at most 200 characters); a UUIDv7 when absent. Appending the same ids again does not repeat them. */
  readonly id?: string;
  readonly metadata?: EventMetadata;
}

export interface AppendOptions {
  /** Default 'any'. */
  readonly expectedVersion?: ExpectedVersion;
  /** Put on every event's metadata (an event's own metadata wins). */
  readonly correlationId?: string;
  readonly causationId?: string;
  /**
   * Commit this append at once in a transaction of its own, not with the rest of the turn's writes (SQLite with
   * group commit; other backends commit each append at once anyway): for a single writer working through a queue
   * of commands, whose next command waits for this append, a busy turn's end is the longer wait.
   */
  readonly immediate?: boolean;
}

export type EventStoreEvent =
  | (StratusEvent & {
      readonly component: 'event-store';
      readonly type: 'appended';
      readonly streamName: string;
      readonly count: number;
      readonly written: boolean;
      readonly lastPosition: number;
    })
  | (StratusEvent & {
      readonly component: 'event-store';
      readonly type: 'conflict';
      readonly streamName: string;
      readonly expected: ExpectedVersion;
      readonly actual: number;
    });

export interface EventStoreOptions {
  readonly backend: EventStoreBackend;
  /** Known event types, their schema versions and upcasters; without it any type is accepted as is. */
  readonly types?: EventTypes;
  readonly clock?: Clock;
  /** Names this store in events and telemetry; default the backend's kind. */
  readonly name?: string;
}

/** Stream names: 1–200 characters, no control characters or lone surrogates. */
const MAX_NAME_LENGTH = 200;

/** False for control characters and lone UTF-16 surrogates (which no backend can store as UTF-8). */
function isSafeText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      return false;
    }
  }
  return true;
}

export function assertStreamName(streamName: unknown): asserts streamName is string {
  if (typeof streamName !== 'string') throw new InvalidStreamNameError(streamName, 'expected a string');
  if (streamName.length === 0 || streamName.length > MAX_NAME_LENGTH) {
    throw new InvalidStreamNameError(streamName, `expected 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (!isSafeText(streamName)) {
    throw new InvalidStreamNameError(streamName, 'control characters and lone surrogates are not allowed');
  }
}

function checkText(index: number, field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new InvalidEventError(index, field, `expected a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (!isSafeText(value)) {
    throw new InvalidEventError(index, field, 'control characters and lone surrogates are not allowed');
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function toJson(index: number, field: string, value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new InvalidEventError(index, field, `not serialisable as JSON (${(error as Error).message})`);
  }
  if (json === undefined) throw new InvalidEventError(index, field, 'not serialisable as JSON');
  return json;
}

/**
 * The event store: appends with optimistic concurrency and idempotent event ids, stream and global reads, event
 * types with upcasting on read, over any backend (memory, SQLite, PostgreSQL).
 */
export class EventStore {
  readonly name: string;
  readonly backend: EventStoreBackend;
  readonly types: EventTypes | undefined;
  readonly clock: Clock;
  readonly events = new EventEmitter<EventStoreEvent>();

  constructor(options: EventStoreOptions) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    const { backend, types, clock = systemClock, name } = options;
    if (typeof backend !== 'object' || backend === null || typeof backend.append !== 'function') {
      throw new InvalidOptionsError('backend', 'expected an event store backend');
    }
    if (name !== undefined && (typeof name !== 'string' || name.length === 0)) {
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    }
    this.backend = backend;
    this.types = types;
    this.clock = clock;
    this.name = name ?? backend.kind;
  }

  /**
   * Appends events to a stream atomically. Throws WrongExpectedVersionError (nothing written) when the stream is
   * not at the expected version, unless these exact events were appended before: then nothing is written again
   * and the result has `written: false`.
   */
  async appendToStream(
    streamName: string,
    events: readonly NewEvent[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    assertStreamName(streamName);
    const expectedVersion = options.expectedVersion ?? 'any';
    checkExpectedVersionOption(expectedVersion);
    const prepared = this.prepare(events, options);
    try {
      const result = await this.backend.append({
        streamName,
        expectedVersion,
        events: prepared,
        now: this.clock.now(),
        immediate: options.immediate,
      });
      if (this.events.active) {
        this.events.emit({
          component: 'event-store',
          name: this.name,
          type: 'appended',
          at: this.clock.now(),
          streamName,
          count: prepared.length,
          written: result.written,
          lastPosition: result.lastPosition,
        });
      }
      return result;
    } catch (error) {
      if (error instanceof WrongExpectedVersionError && this.events.active) {
        this.events.emit({
          component: 'event-store',
          name: this.name,
          type: 'conflict',
          at: this.clock.now(),
          streamName,
          expected: error.expected,
          actual: error.actual,
        });
      }
      throw error;
    }
  }

  /** Validates events and turns them into what backends store (ids assigned, JSON text). */
  prepare(events: readonly NewEvent[], options: AppendOptions = {}): EventToStore[] {
    if (!Array.isArray(events)) throw new InvalidEventError(0, 'events', 'expected an array of events');
    const shared: Record<string, unknown> = {};
    for (const key of ['correlationId', 'causationId'] as const) {
      const value = options[key];
      if (value === undefined) continue;
      if (typeof value !== 'string') throw new InvalidOptionsError(key, 'expected a string');
      shared[key] = value;
    }
    const now = this.clock.now();
    return events.map((event, index) => {
      if (!isPlainObject(event)) throw new InvalidEventError(index, 'event', 'expected an object');
      checkText(index, 'type', event.type);
      if (event.data === undefined) throw new InvalidEventError(index, 'data', 'missing');
      const id = event.id ?? uuidv7(now);
      checkText(index, 'id', id);
      const { metadata } = event;
      if (metadata !== undefined && !isPlainObject(metadata)) {
        throw new InvalidEventError(index, 'metadata', 'expected a plain object');
      }
      for (const key of ['correlationId', 'causationId'] as const) {
        const value = metadata?.[key];
        if (value !== undefined && typeof value !== 'string') {
          throw new InvalidEventError(index, `metadata.${key}`, 'expected a string');
        }
      }
      const types = this.types;
      const schemaVersion = types === undefined ? 1 : types.schemaVersionFor(event.type);
      const problem = types?.problemWith(event.type, event.data);
      if (problem !== undefined) throw new InvalidEventError(index, 'data', problem);
      return {
        id,
        type: event.type,
        data: toJson(index, 'data', event.data),
        metadata: toJson(index, 'metadata', metadata === undefined ? shared : { ...shared, ...metadata }),
        schemaVersion,
      };
    });
  }

  async readStream<E extends RecordedEvent = RecordedEvent>(
    streamName: string,
    query: ReadStreamQuery = {},
  ): Promise<E[]> {
    assertStreamName(streamName);
    checkReadStreamQuery(query);
    return this.#upcastAll(await this.backend.readStream(streamName, query)) as E[];
  }

  /** Folds a stream's events into a state, starting from `state` at `version` (a snapshot) when given. */
  async aggregateStream<State, E extends RecordedEvent = RecordedEvent>(
    streamName: string,
    options: {
      readonly initialState: () => State;
      readonly evolve: (state: State, event: E) => State;
      readonly snapshot?: { readonly state: State; readonly version: number };
    },
  ): Promise<{ state: State; version: number }> {
    const { snapshot } = options;
    let state = snapshot === undefined ? options.initialState() : snapshot.state;
    let version = snapshot?.version ?? 0;
    for (const event of await this.readStream<E>(streamName, { from: version + 1 })) {
      state = options.evolve(state, event);
      version = event.streamVersion;
    }
    return { state, version };
  }

  async streamVersion(streamName: string): Promise<number> {
    assertStreamName(streamName);
    return this.backend.streamVersion(streamName);
  }

  /** Events after a global position, in order, upcast. */
  async readAll<E extends RecordedEvent = RecordedEvent>(query: ReadAllQuery = {}): Promise<E[]> {
    const { after = 0, maxCount = 1000, following = false } = query;
    checkWhole('after', after, 0);
    checkWhole('maxCount', maxCount, 1);
    if (typeof following !== 'boolean') throw new InvalidOptionsError('following', 'expected a boolean');
    return this.#upcastAll(await this.backend.readAll({ after, maxCount, following })) as E[];
  }

  headPosition(): Promise<number> {
    return this.backend.headPosition();
  }

  listStreams(query: ListStreamsQuery = {}): Promise<StreamInfo[]> {
    if (query.category !== undefined && typeof query.category !== 'string') {
      throw new InvalidOptionsError('category', 'expected a string');
    }
    if (query.after !== undefined && typeof query.after !== 'string') {
      throw new InvalidOptionsError('after', 'expected a string');
    }
    if (query.limit !== undefined) checkWhole('limit', query.limit, 1);
    return this.backend.listStreams(query);
  }

  /** A catch-up subscription to all events (see Subscription). */
  subscribe<E extends RecordedEvent = RecordedEvent>(options: SubscriptionOptions<E>): Subscription<E> {
    return new Subscription(this, options);
  }

  /**
   * The events a subscription (or a projection, `projection:<name>@<version>`) has parked, in position order: for
   * an operator or a tool in another process than the subscription's.
   */
  parked(subscription: string, query: ListParkedQuery = {}): Promise<ParkedEvent[]> {
    checkName('subscription', subscription);
    if (query.after !== undefined) checkWhole('after', query.after, 0);
    if (query.limit !== undefined) checkWhole('limit', query.limit, 1);
    return this.backend.listParked(subscription, query);
  }

  /**
   * Asks a subscription to handle parked events again, in order (it does at its next look, within its poll
   * interval); resolves with how many were marked.
   */
  retryParked(subscription: string, selection: ParkedSelection = 'all'): Promise<number> {
    checkName('subscription', subscription);
    assertParkedSelection(selection);
    return this.backend.requestParkedRetry(subscription, selection);
  }

  /** Drops parked events without handling them; resolves with how many were dropped. */
  skipParked(subscription: string, selection: ParkedSelection = 'all'): Promise<number> {
    checkName('subscription', subscription);
    assertParkedSelection(selection);
    return this.backend.removeParked(subscription, selection);
  }

  /** How many events each subscription has parked (those with none are left out). */
  parkedCounts(): Promise<Record<string, number>> {
    return this.backend.countParked();
  }

  close(): Promise<void> {
    return this.backend.close();
  }

  #upcastAll(events: RecordedEvent[]): RecordedEvent[] {
    const types = this.types;
    return types === undefined ? events : events.map((event) => types.upcast(event));
  }
}

function checkWhole(option: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionsError(option, `expected an integer >= ${min}`);
  }
}

function checkName(option: string, value: unknown): void {
  if (typeof value !== 'string' || value.length === 0)
    throw new InvalidOptionsError(option, 'expected a non-empty string');
}

function checkExpectedVersionOption(expected: unknown): void {
  if (expected === 'any' || expected === 'no-stream' || expected === 'stream-exists') return;
  checkWhole('expectedVersion', expected, 0);
}

function checkReadStreamQuery(query: ReadStreamQuery): void {
  if (typeof query !== 'object' || query === null)
    throw new InvalidOptionsError('query', 'expected an object');
  if (query.from !== undefined) checkWhole('from', query.from, 1);
  if (query.maxCount !== undefined) checkWhole('maxCount', query.maxCount, 1);
  if (query.direction !== undefined && query.direction !== 'forwards' && query.direction !== 'backwards') {
    throw new InvalidOptionsError('direction', "expected 'forwards' or 'backwards'");
  }
}
