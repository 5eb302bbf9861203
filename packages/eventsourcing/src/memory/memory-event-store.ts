import type { Unsubscribe } from '@stratus/core';
import { repeatedAppend, sliceStream, versionMatches } from '../append-rules.js';
import {
  type AppendRequest,
  type AppendResult,
  categoryOf,
  type EventStoreBackend,
  type ListParkedQuery,
  type ListStreamsQuery,
  type ParkedEvent,
  type ParkedSelection,
  type ParkedSummary,
  type ReadAllQuery,
  type ReadStreamQuery,
  type RecordedEvent,
  type StoredSnapshot,
  type StreamInfo,
} from '../backend.js';
import { EventStoreClosedError, WrongExpectedVersionError } from '../errors.js';
import { MemoryParkedEvents } from './memory-parked-events.js';

interface StoredEvent {
  readonly id: string;
  readonly type: string;
  readonly data: string;
  readonly metadata: string;
  readonly schemaVersion: number;
  readonly streamName: string;
  readonly streamVersion: number;
  readonly globalPosition: number;
  readonly recordedAt: number;
}

interface Stream {
  readonly events: StoredEvent[];
  readonly createdAt: number;
  updatedAt: number;
}

function recorded(event: StoredEvent): RecordedEvent {
  return {
    id: event.id,
    type: event.type,
    data: JSON.parse(event.data),
    metadata: JSON.parse(event.metadata),
    schemaVersion: event.schemaVersion,
    streamName: event.streamName,
    streamVersion: event.streamVersion,
    globalPosition: event.globalPosition,
    recordedAt: event.recordedAt,
  };
}

/**
 * The event store in process memory, for tests and single-process use. Data and metadata are kept as the JSON
 * text the other backends store, so every read returns fresh objects, as theirs do.
 */
export class MemoryEventStoreBackend implements EventStoreBackend {
  readonly kind = 'memory';
  readonly #all: StoredEvent[] = [];
  readonly #streams = new Map<string, Stream>();
  readonly #byId = new Map<string, StoredEvent>();
  readonly #checkpoints = new Map<string, number>();
  readonly #snapshots = new Map<string, StoredSnapshot>();
  readonly #parked = new MemoryParkedEvents();
  readonly #watchers = new Set<() => void>();
  #closed = false;

  async append(request: AppendRequest): Promise<AppendResult> {
    this.#open();
    const { streamName, events, now } = request;
    const stream = this.#streams.get(streamName);
    const version = stream?.events.length ?? 0;
    const versionOk = versionMatches(request.expectedVersion, version);
    if (!versionOk || events.some((event) => this.#byId.has(event.id))) {
      const repeat = repeatedAppend(streamName, events, (id) => this.#byId.get(id));
      if (repeat !== undefined) return { ...repeat, nextExpectedVersion: version };
      throw new WrongExpectedVersionError(streamName, request.expectedVersion, version);
    }
    if (events.length === 0) {
      return { streamName, nextExpectedVersion: version, firstPosition: 0, lastPosition: 0, written: false };
    }
    const target = stream ?? { events: [], createdAt: now, updatedAt: now };
    if (stream === undefined) this.#streams.set(streamName, target);
    target.updatedAt = now;
    const firstPosition = this.#all.length + 1;
    events.forEach((event, i) => {
      const stored: StoredEvent = {
        ...event,
        streamName,
        streamVersion: version + i + 1,
        globalPosition: firstPosition + i,
        recordedAt: now,
      };
      target.events.push(stored);
      this.#all.push(stored);
      this.#byId.set(event.id, stored);
    });
    queueMicrotask(() => {
      for (const watcher of this.#watchers) watcher();
    });
    return {
      streamName,
      nextExpectedVersion: version + events.length,
      firstPosition,
      lastPosition: firstPosition + events.length - 1,
      written: true,
    };
  }

  async readStream(streamName: string, query: ReadStreamQuery = {}): Promise<RecordedEvent[]> {
    this.#open();
    const events = this.#streams.get(streamName)?.events ?? [];
    return sliceStream(events.length, query).map((index) => recorded(events[index] as StoredEvent));
  }

  async streamVersion(streamName: string): Promise<number> {
    this.#open();
    return this.#streams.get(streamName)?.events.length ?? 0;
  }

  async readAll(query: ReadAllQuery = {}): Promise<RecordedEvent[]> {
    this.#open();
    const { after = 0, maxCount = 1000 } = query;
    return this.#all.slice(after, after + maxCount).map(recorded);
  }

  async headPosition(): Promise<number> {
    this.#open();
    return this.#all.length;
  }

  async listStreams(query: ListStreamsQuery = {}): Promise<StreamInfo[]> {
    this.#open();
    const { category, after, limit = 100 } = query;
    const names = [...this.#streams.keys()]
      .filter(
        (name) =>
          (category === undefined || categoryOf(name) === category) && (after === undefined || name > after),
      )
      .sort()
      .slice(0, limit);
    return names.map((streamName) => {
      const stream = this.#streams.get(streamName) as Stream;
      return {
        streamName,
        category: categoryOf(streamName),
        version: stream.events.length,
        createdAt: stream.createdAt,
        updatedAt: stream.updatedAt,
      };
    });
  }

  async loadCheckpoint(name: string): Promise<number | undefined> {
    this.#open();
    return this.#checkpoints.get(name);
  }

  async storeCheckpoint(name: string, position: number): Promise<void> {
    this.#open();
    this.#checkpoints.set(name, position);
  }

  async parkEvents(events: readonly ParkedEvent[]): Promise<void> {
    this.#open();
    this.#parked.parkEvents(events);
  }

  async listParked(subscription: string, query?: ListParkedQuery): Promise<ParkedEvent[]> {
    this.#open();
    return this.#parked.listParked(subscription, query);
  }

  async removeParked(subscription: string, selection: ParkedSelection): Promise<number> {
    this.#open();
    return this.#parked.removeParked(subscription, selection);
  }

  async requestParkedRetry(subscription: string, selection: ParkedSelection): Promise<number> {
    this.#open();
    return this.#parked.requestParkedRetry(subscription, selection);
  }

  async countParked(): Promise<Record<string, number>> {
    this.#open();
    return this.#parked.countParked();
  }

  async summarizeParked(subscription: string): Promise<ParkedSummary> {
    this.#open();
    return this.#parked.summarizeParked(subscription);
  }

  async loadSnapshot(streamName: string): Promise<StoredSnapshot | undefined> {
    this.#open();
    return this.#snapshots.get(streamName);
  }

  async storeSnapshot(snapshot: StoredSnapshot): Promise<void> {
    this.#open();
    this.#snapshots.set(snapshot.streamName, { ...snapshot });
  }

  async watch(listener: () => void): Promise<Unsubscribe> {
    const own = () => listener();
    this.#watchers.add(own);
    return () => this.#watchers.delete(own);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watchers.clear();
  }

  #open(): void {
    if (this.#closed) throw new EventStoreClosedError();
  }
}
