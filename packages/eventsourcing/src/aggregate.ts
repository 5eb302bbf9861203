import {
  assertCount,
  assertDuration,
  assertFunction,
  assertInteger,
  EventEmitter,
  InvalidOptionsError,
  type StratusError,
  type StratusEvent,
} from '@stratus/core';
import type { AppendResult, RecordedEvent } from './backend.js';
import { WrongExpectedVersionError } from './errors.js';
import type { EventStore, NewEvent } from './event-store.js';
import { SnapshotCache } from './snapshot-cache.js';

/** A domain event: what decide returns and evolve folds (recorded events have these two fields too). */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
}

/** An aggregate as two pure functions over its state (the decider pattern). */
export interface Decider<State, Event extends DomainEvent, Command = never> {
  initialState(): State;
  /** Must not mutate `state`: return a new one (states are cached and shared). */
  evolve(state: State, event: Event): State;
  /** Optional: the rule that turns a command into events (or throws a domain error). */
  decide?(command: Command, state: State): Event | readonly Event[];
}

/** Without this option a repository neither takes nor reads snapshots (and loads skip the snapshot lookup). */
export interface SnapshotOptions<State> {
  /** Take a snapshot whenever the stream crosses a multiple of this many events; default: only on demand. */
  readonly every?: number;
  /** Version of the state's shape; snapshots of another version are ignored (the stream is replayed). Default 1. */
  readonly schemaVersion?: number;
  /** State to JSON-compatible value and back; default identity (the state is JSON as is). */
  readonly toJson?: (state: State) => unknown;
  readonly fromJson?: (json: unknown) => State;
}

export interface SnapshotCacheOptions {
  /** How long an entry stays (absolute); default 30 min (the CQRS Journey's memento cache). */
  readonly ttlMs?: number;
  /**
   * An entry younger than this is used without reading the stream at all, betting on a single writer (a conflict on
   * append then reloads); older ones read only the events after them. Default 1000 ms, as in the Journey; 0 always reads.
   */
  readonly trustMs?: number;
  /** Entries kept, least recently used dropped first; default 10,000. */
  readonly maxEntries?: number;
}

export interface AggregateRepositoryOptions<State, Event extends DomainEvent, Command> {
  /** Streams are `<category>-<id>`. */
  readonly category: string;
  readonly decider: Decider<State, Event, Command>;
  readonly snapshots?: SnapshotOptions<State>;
  /** An in-process cache of recent states (after loads and saves); off unless given. */
  readonly cache?: SnapshotCacheOptions;
  /** Attempts of `handle` when the append meets a concurrent change (it reloads and decides again); default 3. */
  readonly maxAttempts?: number;
  /**
   * Appends commit at once, each alone (AppendOptions.immediate): for an aggregate with a single writer working
   * through a queue of commands, where each command waits for the previous one's commit. Default false.
   */
  readonly immediateAppends?: boolean;
}

export interface Loaded<State> {
  readonly state: State;
  /** The stream version the state includes (0: no events). */
  readonly version: number;
}

export interface HandleOptions {
  /** Decide against this version only: a concurrent change fails with WrongExpectedVersionError, no retry. */
  readonly expectedVersion?: number;
  /** Retry (reload and decide again) when another writer got there first; default true. */
  readonly retryOnConflict?: boolean;
  readonly correlationId?: string;
  readonly causationId?: string;
  /**
   * Ids for the new events, by position (for idempotent commands: the same command appends the same ids); a
   * function is asked only for the events decided, so ids that cost a hash are made only when used.
   */
  readonly eventIds?: readonly string[] | ((index: number) => string);
  /**
   * The stream most likely does not exist yet (an id just generated): the first attempt decides against the initial
   * state without reading the stream, and appends expecting no stream. If the stream does exist, that append fails
   * and the command is decided again on a real load, without counting as an attempt. Default false.
   */
  readonly assumeNew?: boolean;
}

export interface Handled<State, Event> extends Loaded<State> {
  readonly events: readonly Event[];
  /** Undefined when decide returned no events. */
  readonly appended: AppendResult | undefined;
}

/** One decision of `handleBatch`. */
export interface BatchDecision<State, Event> {
  readonly decide: (state: State) => Event | readonly Event[];
  /** Its events' ids and their correlation and causation ids. */
  readonly options?: Pick<HandleOptions, 'correlationId' | 'causationId' | 'eventIds'>;
}

export interface HandledBatch<State> extends Loaded<State> {
  /** How many decisions, from the first, were decided and appended (the rest were left for the caller). */
  readonly decided: number;
  /** Undefined when they decided no events. */
  readonly appended: AppendResult | undefined;
}

export type AggregateEvent = StratusEvent & { readonly component: 'aggregate' } & (
    | { readonly type: 'conflict'; readonly id: string; readonly attempt: number }
    | { readonly type: 'snapshot-taken'; readonly id: string; readonly version: number }
    | { readonly type: 'snapshot-failed'; readonly id: string; readonly error: unknown }
  );

/**
 * Loads aggregates from their streams (from the newest snapshot, or from an in-process cache of recent states),
 * runs decisions against them and appends the outcome with optimistic concurrency, retrying on conflicts.
 */
export class AggregateRepository<State, Event extends DomainEvent, Command = never> {
  readonly category: string;
  readonly events = new EventEmitter<AggregateEvent>();
  readonly #store: EventStore;
  readonly #decider: Decider<State, Event, Command>;
  readonly #snapshots: Required<Omit<SnapshotOptions<State>, 'every'>> & { every: number | undefined };
  readonly #usesSnapshots: boolean;
  readonly #cache: SnapshotCache<Loaded<State>> | undefined;
  readonly #maxAttempts: number;
  readonly #immediateAppends: boolean;

  constructor(store: EventStore, options: AggregateRepositoryOptions<State, Event, Command>) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    const { category, decider, snapshots = {}, cache, maxAttempts = 3 } = options;
    this.#usesSnapshots = options.snapshots !== undefined;
    if (typeof category !== 'string' || category.length === 0 || category.includes('-')) {
      throw new InvalidOptionsError('category', 'expected a non-empty string without "-"');
    }
    if (typeof decider !== 'object' || decider === null)
      throw new InvalidOptionsError('decider', 'expected an object');
    assertFunction('decider.initialState', decider.initialState);
    assertFunction('decider.evolve', decider.evolve);
    if (decider.decide !== undefined) assertFunction('decider.decide', decider.decide);
    if (snapshots.every !== undefined) assertCount('snapshots.every', snapshots.every, 1);
    const schemaVersion = snapshots.schemaVersion ?? 1;
    assertInteger('snapshots.schemaVersion', schemaVersion, 1);
    assertCount('maxAttempts', maxAttempts, 1);
    this.category = category;
    this.#store = store;
    this.#decider = decider;
    this.#snapshots = {
      every: snapshots.every,
      schemaVersion,
      toJson: snapshots.toJson ?? ((state) => state),
      fromJson: snapshots.fromJson ?? ((json) => json as State),
    };
    this.#maxAttempts = maxAttempts;
    if (options.immediateAppends !== undefined && typeof options.immediateAppends !== 'boolean')
      throw new InvalidOptionsError('immediateAppends', 'expected a boolean');
    this.#immediateAppends = options.immediateAppends === true;
    if (cache !== undefined) {
      const { ttlMs = 30 * 60_000, trustMs = 1000, maxEntries = 10_000 } = cache;
      assertDuration('cache.ttlMs', ttlMs, { allowZero: false });
      assertDuration('cache.trustMs', trustMs);
      assertCount('cache.maxEntries', maxEntries, 1);
      this.#cache = new SnapshotCache(store.clock, { ttlMs, trustMs, maxEntries });
    }
  }

  streamName(id: string): string {
    if (typeof id !== 'string' || id.length === 0)
      throw new InvalidOptionsError('id', 'expected a non-empty string');
    return `${this.category}-${id}`;
  }

  /** The aggregate's current state (the initial state at version 0 when it has no events). */
  async load(id: string): Promise<Loaded<State>> {
    const streamName = this.streamName(id);
    const cached = this.#cache?.get(streamName);
    if (cached?.trusted) return cached.value;
    const start = cached?.value ?? (this.#usesSnapshots ? await this.#fromSnapshot(streamName) : undefined);
    const loaded = await this.#store.aggregateStream<State, Event & RecordedEvent>(streamName, {
      initialState: () => this.#decider.initialState(),
      evolve: (state, event) => this.#decider.evolve(state, event),
      snapshot: start,
    });
    this.#cache?.set(streamName, loaded);
    return loaded;
  }

  /** Runs `decide` on the current state and appends its events; see HandleOptions for conflicts. */
  async handle(
    id: string,
    decide: (state: State) => Event | readonly Event[],
    options: HandleOptions = {},
  ): Promise<Handled<State, Event>> {
    assertFunction('decide', decide);
    const streamName = this.streamName(id);
    const retry = options.retryOnConflict !== false && options.expectedVersion === undefined;
    const eventId = eventIdsOf(options.eventIds);
    let guessNew = options.assumeNew === true && options.expectedVersion === undefined;
    let checkedRefusal = false;
    for (let attempt = 1; ; attempt++) {
      const guessing = guessNew && this.#cache?.get(streamName) === undefined;
      // A trusted cache entry is used without reading the stream: a refusal decided on it is checked on the stream.
      const trusted = !guessing && this.#cache?.get(streamName)?.trusted === true;
      // A guess that turns out wrong (the stream exists, or the initial state decides nothing or refuses) is
      // dropped for a real load, and that attempt does not count.
      const dropGuess = () => {
        guessNew = false;
        attempt--;
      };
      const current = guessing ? { state: this.#decider.initialState(), version: 0 } : await this.load(id);
      if (options.expectedVersion !== undefined && options.expectedVersion !== current.version) {
        throw new WrongExpectedVersionError(streamName, options.expectedVersion, current.version);
      }
      let decided: Event | readonly Event[];
      try {
        decided = decide(current.state);
      } catch (error) {
        if (trusted && !checkedRefusal) {
          // Another process (or thread) may have moved the aggregate on since: decide again on what is stored.
          checkedRefusal = true;
          this.#cache?.distrust(streamName);
          attempt--;
          continue;
        }
        if (!guessing) throw error;
        dropGuess();
        continue;
      }
      const events: readonly Event[] = Array.isArray(decided) ? decided : [decided as Event];
      if (events.length === 0) {
        if (!guessing) return { ...current, events, appended: undefined };
        dropGuess();
        continue;
      }
      const newEvents = events.map((event, i) => newEvent(event, eventId(i)));
      try {
        const appended = await this.#store.appendToStream(streamName, newEvents, {
          expectedVersion: current.version,
          correlationId: options.correlationId,
          causationId: options.causationId,
          immediate: this.#immediateAppends,
        });
        let state = current.state;
        for (const event of events) state = this.#decider.evolve(state, event);
        const saved = { state, version: appended.nextExpectedVersion };
        if (!appended.written) {
          // The same events were appended before (an idempotent retry): the stored stream is the truth.
          this.#cache?.delete(streamName);
          return { ...(await this.load(id)), events, appended };
        }
        this.#cache?.set(streamName, saved);
        await this.#snapshotIfDue(streamName, current.version, saved);
        return { ...saved, events, appended };
      } catch (error) {
        // The state loaded is still one the stream reached: the next load reads only the events after it.
        this.#cache?.distrust(streamName);
        if (guessing && error instanceof WrongExpectedVersionError) {
          dropGuess();
          continue;
        }
        if (!(error instanceof WrongExpectedVersionError) || !retry || attempt >= this.#maxAttempts)
          throw error;
        this.#conflicted(id, attempt);
      }
    }
  }

  /**
   * Runs decisions in order, each on the state the ones before it left, and appends all their events in one
   * append (one commit): for a single writer with a backlog of commands, where one by one each command would wait
   * for the previous one's commit. It decides the longest run of decisions from the first that do not throw (the
   * first one's error is thrown) and leaves the rest to the caller. A conflict reloads and decides them all again,
   * as `handle` does. If some of their event ids are stored already (a redelivered command), nothing is appended
   * and DuplicateEventIdError is thrown: handle them one by one then.
   */
  async handleBatch(
    id: string,
    decisions: readonly BatchDecision<State, Event>[],
  ): Promise<HandledBatch<State>> {
    if (!Array.isArray(decisions) || decisions.length === 0)
      throw new InvalidOptionsError('decisions', 'expected a non-empty array');
    for (const decision of decisions) assertFunction('decisions[].decide', decision?.decide);
    const streamName = this.streamName(id);
    for (let attempt = 1; ; attempt++) {
      const current = await this.load(id);
      let state = current.state;
      const newEvents: NewEvent[] = [];
      let decided = 0;
      for (const { decide, options = {} } of decisions) {
        let events: readonly Event[];
        try {
          const outcome = decide(state);
          events = Array.isArray(outcome) ? outcome : [outcome as Event];
        } catch (error) {
          if (decided === 0) throw error;
          break;
        }
        const eventId = eventIdsOf(options.eventIds);
        const metadata = {
          ...(options.correlationId === undefined ? {} : { correlationId: options.correlationId }),
          ...(options.causationId === undefined ? {} : { causationId: options.causationId }),
        };
        events.forEach((event, i) => {
          newEvents.push({ ...newEvent(event, eventId(i)), metadata });
          state = this.#decider.evolve(state, event);
        });
        decided++;
      }
      if (newEvents.length === 0) return { ...current, decided, appended: undefined };
      try {
        const appended = await this.#store.appendToStream(streamName, newEvents, {
          expectedVersion: current.version,
          immediate: this.#immediateAppends,
        });
        if (!appended.written) {
          this.#cache?.delete(streamName);
          return { ...(await this.load(id)), decided, appended };
        }
        const saved = { state, version: appended.nextExpectedVersion };
        this.#cache?.set(streamName, saved);
        await this.#snapshotIfDue(streamName, current.version, saved);
        return { ...saved, decided, appended };
      } catch (error) {
        this.#cache?.distrust(streamName);
        if (!(error instanceof WrongExpectedVersionError) || attempt >= this.#maxAttempts) throw error;
        this.#conflicted(id, attempt);
      }
    }
  }

  #conflicted(id: string, attempt: number): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'aggregate',
      name: this.category,
      type: 'conflict',
      at: this.#store.clock.now(),
      id,
      attempt,
    });
  }

  /** Runs the decider's `decide` for a command (see handle). */
  execute(id: string, command: Command, options?: HandleOptions): Promise<Handled<State, Event>> {
    const decide = this.#decider.decide;
    if (decide === undefined)
      throw new InvalidOptionsError('decider.decide', 'this decider has no decide function');
    return this.handle(id, (state) => decide(command, state), options);
  }

  /** Takes a snapshot of the aggregate now (the repository needs the `snapshots` option). */
  async snapshot(id: string): Promise<Loaded<State>> {
    if (!this.#usesSnapshots)
      throw new InvalidOptionsError('snapshots', 'this repository was created without snapshots');
    const streamName = this.streamName(id);
    const loaded = await this.load(id);
    await this.#storeSnapshot(streamName, loaded);
    return loaded;
  }

  async #fromSnapshot(streamName: string): Promise<Loaded<State> | undefined> {
    const stored = await this.#store.backend.loadSnapshot(streamName);
    if (stored === undefined || stored.schemaVersion !== this.#snapshots.schemaVersion) return undefined;
    return { state: this.#snapshots.fromJson(JSON.parse(stored.state)), version: stored.version };
  }

  async #snapshotIfDue(streamName: string, before: number, saved: Loaded<State>): Promise<void> {
    const every = this.#snapshots.every;
    if (every === undefined || Math.floor(before / every) === Math.floor(saved.version / every)) return;
    try {
      await this.#storeSnapshot(streamName, saved);
    } catch (error) {
      // The events are stored: a missing snapshot only costs a longer replay next time.
      if (this.events.active) {
        this.events.emit({
          component: 'aggregate',
          name: this.category,
          type: 'snapshot-failed',
          at: this.#store.clock.now(),
          id: streamName,
          error: error as StratusError,
        });
      }
    }
  }

  async #storeSnapshot(streamName: string, loaded: Loaded<State>): Promise<void> {
    await this.#store.backend.storeSnapshot({
      streamName,
      version: loaded.version,
      state: JSON.stringify(this.#snapshots.toJson(loaded.state)),
      schemaVersion: this.#snapshots.schemaVersion,
      takenAt: this.#store.clock.now(),
    });
    if (this.events.active) {
      this.events.emit({
        component: 'aggregate',
        name: this.category,
        type: 'snapshot-taken',
        at: this.#store.clock.now(),
        id: streamName,
        version: loaded.version,
      });
    }
  }
}

function eventIdsOf(eventIds: HandleOptions['eventIds']): (index: number) => string | undefined {
  return typeof eventIds === 'function' ? eventIds : (index) => eventIds?.[index];
}

function newEvent(event: DomainEvent, id: string | undefined): NewEvent {
  return id === undefined
    ? { type: event.type, data: event.data }
    : { type: event.type, data: event.data, id };
}
