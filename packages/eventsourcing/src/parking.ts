import { assertInteger, type Clock, InvalidOptionsError } from '@stratus/core';
import type {
  EventStoreBackend,
  ParkedEvent,
  ParkedReason,
  ParkedSelection,
  RecordedEvent,
} from './backend.js';
import type { EventStore } from './event-store.js';

/** Where a subscription keeps its parked events: its store's backend, or memory for an unnamed subscription. */
export type ParkedEventStore = Pick<
  EventStoreBackend,
  'parkEvents' | 'listParked' | 'removeParked' | 'requestParkedRetry' | 'countParked' | 'summarizeParked'
>;

/** Throws InvalidOptionsError unless `selection` is 'all' or an array of positions. */
export function assertParkedSelection(selection: unknown): asserts selection is ParkedSelection {
  if (selection === 'all') return;
  if (!Array.isArray(selection))
    throw new InvalidOptionsError('selection', "expected 'all' or an array of positions");
  for (const position of selection) assertInteger('selection', position, 1);
}

/** Longest error message kept with a parked event. */
const MAX_ERROR_LENGTH = 2000;

/** UTF-16 surrogates without their other half. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** An error as a parked event stores it: its message, made storable in any backend (no NUL, no lone surrogate). */
export function parkedErrorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.slice(0, MAX_ERROR_LENGTH).replaceAll('\u0000', '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

/** What parking tells of, as events of the subscription or projection runner that parks. */
export type ParkingEventDetail =
  | {
      readonly type: 'event-parked';
      readonly position: number;
      readonly streamName: string;
      readonly reason: ParkedReason;
      readonly attempts: number;
      /** The error's text as stored ('' when blocked behind another parked event). */
      readonly error: string;
    }
  | { readonly type: 'parked-event-handled'; readonly position: number };

export interface ParkingOptions<E extends RecordedEvent> {
  /** The subscription's name, under which its events are parked. */
  readonly subscription: string;
  /** Where the parked events are kept (default the event store's backend). */
  readonly parkedIn?: ParkedEventStore;
  /** The event store the events are read from again when retried. */
  readonly events: EventStore;
  /** The ordering keys of an event (default its stream name). */
  readonly keysOf: ((event: E) => string | readonly string[]) | undefined;
  /** Told of every event parked (or parked again after a failed retry), and of every one a retry handled. */
  readonly emit: (detail: ParkingEventDetail) => void;
  /** Told when a retry or a skip was asked for here: the parked events are to be looked at again soon. */
  readonly onRequest: () => void;
}

/**
 * The events one subscription has parked, and the ordering keys they hold up: an event that shares a key with a
 * parked one is parked behind it, so the events of one key are never handled out of order.
 */
export class Parking<E extends RecordedEvent> {
  readonly subscription: string;
  readonly #options: ParkingOptions<E>;
  readonly #store: ParkedEventStore;
  readonly #clock: Clock;
  /** The keys of each parked event, by position. */
  readonly #parked = new Map<number, readonly string[]>();
  /** Parked events per key. */
  readonly #blocked = new Map<string, number>();

  constructor(options: ParkingOptions<E>) {
    this.subscription = options.subscription;
    this.#options = options;
    this.#store = options.parkedIn ?? options.events.backend;
    this.#clock = options.events.clock;
  }

  /** How many events are parked, as last loaded or changed here. */
  get count(): number {
    return this.#parked.size;
  }

  /** Reads every parked event of the subscription (another process may have skipped or marked some). */
  async load(): Promise<ParkedEvent[]> {
    const all: ParkedEvent[] = [];
    for (;;) {
      const page = await this.#store.listParked(this.subscription, {
        after: all.at(-1)?.position ?? 0,
        limit: 1000,
      });
      all.push(...page);
      if (page.length < 1000) break;
    }
    this.#parked.clear();
    this.#blocked.clear();
    for (const parked of all) this.#hold(parked.position, parked.keys);
    return all;
  }

  /** Parks the events that share a key with a parked event; resolves with the others. */
  async parkBlocked(events: readonly E[]): Promise<readonly E[]> {
    if (this.#parked.size === 0) return events;
    const runnable: E[] = [];
    for (const event of events) {
      const keys = this.#keysOf(event);
      if (keys.some((key) => this.#blocked.has(key))) await this.#park(event, keys, 'blocked', undefined, 0);
      else runnable.push(event);
    }
    return runnable;
  }

  /** Parks an event its handler failed on `attempts` times. */
  async parkFailed(event: E, error: unknown, attempts: number): Promise<void> {
    await this.#park(event, this.#keysOf(event), 'failed', error, attempts);
  }

  /**
   * One pass over the parked events, in position order: handles those an operator asked to retry, and those that
   * were only blocked once nothing parked before them holds their keys (the event they waited for was handled or
   * skipped). A key stays held by its first parked event that was not asked for or fails again: the events behind
   * it stay parked (their request lapses).
   */
  async retry(handle: (event: E) => void | Promise<void>, stopped: () => boolean): Promise<void> {
    // Nothing asked for and nothing skipped since the last pass: a pass would change nothing, and reading every
    // parked event at each poll costs a subscription with many of them (a hot stream blocked) a lot.
    const { parked, retryRequested } = await this.#store.summarizeParked(this.subscription);
    if (retryRequested === 0 && parked === this.#parked.size) return;
    const held = new Set<string>();
    for (const parked of await this.load()) {
      if (stopped()) return;
      const behind = parked.keys.some((key) => held.has(key));
      if (behind || !(parked.retryRequested || parked.reason === 'blocked')) {
        for (const key of parked.keys) held.add(key);
        if (parked.retryRequested) await this.#store.parkEvents([{ ...parked, retryRequested: false }]);
        continue;
      }
      const event = await this.#read(parked.position);
      // An event no longer in the store has nothing left to handle.
      if (event !== undefined) {
        try {
          await handle(event);
        } catch (error) {
          for (const key of parked.keys) held.add(key);
          await this.#park(event, parked.keys, 'failed', error, parked.attempts + 1);
          continue;
        }
      }
      // Released here first, so the count never shows an event the store no longer holds. Should the removal fail,
      // the next pass finds the store's count above this one, loads the lot again and handles the event again
      // (at least once, as after a crash).
      this.#release(parked.position);
      await this.#store.removeParked(this.subscription, [parked.position]);
      this.#options.emit({ type: 'parked-event-handled', position: parked.position });
    }
  }

  /** Marks parked events (default all) for a retry, in order; resolves with how many were marked. */
  async requestRetry(selection: ParkedSelection = 'all'): Promise<number> {
    assertParkedSelection(selection);
    const marked = await this.#store.requestParkedRetry(this.subscription, selection);
    this.#options.onRequest();
    return marked;
  }

  /**
   * Drops parked events (default all) unhandled; resolves with how many were dropped. The keys they held are free
   * once the parked events are loaded again.
   */
  async skip(selection: ParkedSelection = 'all'): Promise<number> {
    assertParkedSelection(selection);
    const removed = await this.#store.removeParked(this.subscription, selection);
    this.#options.onRequest();
    return removed;
  }

  /** The event at `position`, undefined if it is gone. */
  async #read(position: number): Promise<E | undefined> {
    const [event] = await this.#options.events.readAll<E>({ after: position - 1, maxCount: 1 });
    return event?.globalPosition === position ? event : undefined;
  }

  async #park(
    event: E,
    keys: readonly string[],
    reason: ParkedReason,
    error: unknown,
    attempts: number,
  ): Promise<void> {
    const parked: ParkedEvent = {
      subscription: this.subscription,
      position: event.globalPosition,
      eventId: event.id,
      eventType: event.type,
      streamName: event.streamName,
      keys,
      reason,
      error: reason === 'blocked' ? '' : parkedErrorText(error),
      attempts,
      parkedAt: this.#clock.now(),
      retryRequested: false,
    };
    await this.#store.parkEvents([parked]);
    this.#hold(parked.position, keys);
    const { position, streamName } = parked;
    this.#options.emit({ type: 'event-parked', position, streamName, reason, attempts, error: parked.error });
  }

  #keysOf(event: E): readonly string[] {
    const keysOf = this.#options.keysOf;
    if (keysOf === undefined) return [event.streamName];
    const keys = keysOf(event);
    return typeof keys === 'string' ? [keys] : keys;
  }

  /** Counts an event's keys as held, once however often it is parked. */
  #hold(position: number, keys: readonly string[]): void {
    if (this.#parked.has(position)) return;
    this.#parked.set(position, keys);
    for (const key of keys) this.#blocked.set(key, (this.#blocked.get(key) ?? 0) + 1);
  }

  #release(position: number): void {
    const keys = this.#parked.get(position);
    if (keys === undefined) return;
    this.#parked.delete(position);
    for (const key of keys) {
      const held = (this.#blocked.get(key) ?? 0) - 1;
      if (held > 0) this.#blocked.set(key, held);
      else this.#blocked.delete(key);
    }
  }
}
