/**
 * The port every event store backend implements (memory, SQLite, PostgreSQL). `contract.ts` is its executable
 * definition: one suite, run against each backend. Backends store what the `EventStore` facade hands them
 * (validated events, ids assigned, data and metadata already JSON text) and never see user objects.
 *
 * Versions and positions:
 * - a stream's events are numbered 1, 2, 3... (its version is the number of the last one; 0: no stream);
 * - every event also gets a global position, increasing in commit order as far as readers can tell: `readAll`
 *   only returns events that no still-running append can precede, so a subscriber that checkpoints the last
 *   position it saw never skips an event (on PostgreSQL concurrent appends take positions out of commit order:
 *   see postgres/schema.ts for how reads wait for them).
 */
import type { Unsubscribe } from '@stratus/core';

/** What the stream's version must be for an append to go ahead. A number is the exact version (0: no stream). */
export type ExpectedVersion = number | 'any' | 'no-stream' | 'stream-exists';

/** An event ready to store. */
export interface EventToStore {
  readonly id: string;
  readonly type: string;
  /** JSON text. */
  readonly data: string;
  /** JSON text of an object. */
  readonly metadata: string;
  readonly schemaVersion: number;
}

export interface AppendRequest {
  readonly streamName: string;
  readonly expectedVersion: ExpectedVersion;
  readonly events: readonly EventToStore[];
  /** Epoch ms, recorded on each event. */
  readonly now: number;
  /** AppendOptions.immediate. */
  readonly immediate?: boolean | undefined;
}

export interface AppendResult {
  readonly streamName: string;
  /** The stream's version after the append: pass it as the next append's expected version. */
  readonly nextExpectedVersion: number;
  /** Global positions of the first and last event of this append (of the original append when a repeat). */
  readonly firstPosition: number;
  readonly lastPosition: number;
  /**
   * False when every event id was already stored by an earlier append of the same events to the same stream:
   * nothing was written (an idempotent retry).
   */
  readonly written: boolean;
}

/** Event metadata: the correlation and causation ids plus whatever the application adds. */
export interface EventMetadata {
  readonly correlationId?: string;
  readonly causationId?: string;
  readonly [key: string]: unknown;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  readonly id: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata: EventMetadata;
  readonly schemaVersion: number;
  readonly streamName: string;
  /** 1 for the stream's first event. */
  readonly streamVersion: number;
  readonly globalPosition: number;
  /** Epoch ms when it was appended. */
  readonly recordedAt: number;
}

export type ReadDirection = 'forwards' | 'backwards';

export interface ReadStreamQuery {
  /** Version to start at, inclusive: default 1 forwards, the last event backwards. */
  readonly from?: number;
  readonly direction?: ReadDirection;
  /** At most this many events; default all. */
  readonly maxCount?: number;
}

export interface ReadAllQuery {
  /** Events after this global position (exclusive); default 0, the beginning. */
  readonly after?: number;
  /** At most this many; default 1000. */
  readonly maxCount?: number;
  /**
   * For readers that read again until they get nothing and are woken by appends (subscriptions, projection
   * runners): the answer holds at least one event when any was committed after `after` before the call, but not
   * necessarily all of them (a backend may answer with what a read already on its way found). Default false: all
   * of them, up to `maxCount`.
   */
  readonly following?: boolean;
}

export interface StreamInfo {
  readonly streamName: string;
  /** The part of the name before its first '-' (the whole name when it has none). */
  readonly category: string;
  readonly version: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ListStreamsQuery {
  readonly category?: string;
  /** Streams whose name sorts after this one (for paging). */
  readonly after?: string;
  /** Default 100. */
  readonly limit?: number;
}

export interface StoredSnapshot {
  readonly streamName: string;
  /** The stream version the state includes. */
  readonly version: number;
  /** JSON text of the state. */
  readonly state: string;
  /** Version of the state's shape: a snapshot of another shape is ignored and the stream replayed. */
  readonly schemaVersion: number;
  readonly takenAt: number;
}

/** Why an event was parked: its handler kept failing, or an earlier parked event shares one of its keys. */
export type ParkedReason = 'failed' | 'blocked';

/**
 * An event a subscription (or projection) set aside so the others could go on: see SubscriptionOptions.onPoison.
 * It stays until retried successfully or skipped.
 */
export interface ParkedEvent {
  /** The subscription's name (a projection's is `projection:<name>@<version>`). */
  readonly subscription: string;
  readonly position: number;
  readonly eventId: string;
  readonly eventType: string;
  readonly streamName: string;
  /** Its ordering keys: later events sharing one are parked behind it ('blocked') while it is. */
  readonly keys: readonly string[];
  readonly reason: ParkedReason;
  /** The last error's message ('' when blocked). */
  readonly error: string;
  /** Attempts made at it, retries included. */
  readonly attempts: number;
  /** Epoch ms when it was last parked. */
  readonly parkedAt: number;
  /** An operator asked for it to be handled again; the subscription does so on its next pass. */
  readonly retryRequested: boolean;
}

export interface ListParkedQuery {
  /** Parked events after this position (for paging); default 0. */
  readonly after?: number;
  /** Default 1000. */
  readonly limit?: number;
}

/** How many events a subscription has parked, and how many of them an operator asked to retry. */
export interface ParkedSummary {
  readonly parked: number;
  readonly retryRequested: number;
}

/** Which parked events of a subscription an operation applies to. */
export type ParkedSelection = readonly number[] | 'all';

export interface EventStoreBackend {
  readonly kind: string;
  /** Throws WrongExpectedVersionError or DuplicateEventIdError, having written nothing. */
  append(request: AppendRequest): Promise<AppendResult>;
  readStream(streamName: string, query?: ReadStreamQuery): Promise<RecordedEvent[]>;
  /** 0 when the stream does not exist. */
  streamVersion(streamName: string): Promise<number>;
  /** Events in global position order; only those no running append can precede (see the module comment). */
  readAll(query?: ReadAllQuery): Promise<RecordedEvent[]>;
  /** The global position of the last readable event (0 when none). */
  headPosition(): Promise<number>;
  listStreams(query?: ListStreamsQuery): Promise<StreamInfo[]>;

  /** Named positions of subscriptions and projections. */
  loadCheckpoint(name: string): Promise<number | undefined>;
  storeCheckpoint(name: string, position: number): Promise<void>;

  /** Stores parked events, replacing any of the same subscription and position. */
  parkEvents(events: readonly ParkedEvent[]): Promise<void>;
  /** A subscription's parked events in position order. */
  listParked(subscription: string, query?: ListParkedQuery): Promise<ParkedEvent[]>;
  /** Deletes parked events; resolves with how many there were. */
  removeParked(subscription: string, selection: ParkedSelection): Promise<number>;
  /** Marks parked events for a retry; resolves with how many it marked. */
  requestParkedRetry(subscription: string, selection: ParkedSelection): Promise<number>;
  /** How many events each subscription has parked (subscriptions with none are left out). */
  countParked(): Promise<Record<string, number>>;
  /**
   * One subscription's parked events counted, without reading them: a subscription polls it to notice a retry
   * asked for, or events skipped, from another process.
   */
  summarizeParked(subscription: string): Promise<ParkedSummary>;

  loadSnapshot(streamName: string): Promise<StoredSnapshot | undefined>;
  storeSnapshot(snapshot: StoredSnapshot): Promise<void>;

  /**
   * Calls `listener` after appends commit (in any process sharing the store, for SQLite and PostgreSQL), so
   * subscribers read again instead of polling. Calls may be merged; a listener must read to find out what changed.
   * Resolves once listening: every append that commits afterwards calls the listener.
   */
  watch(listener: () => void): Promise<Unsubscribe>;
  close(): Promise<void>;
}

/** The category of a stream name: the part before its first '-'. */
export function categoryOf(streamName: string): string {
  const dash = streamName.indexOf('-');
  return dash < 0 ? streamName : streamName.slice(0, dash);
}
