import {
  assertCount,
  assertDuration,
  assertFunction,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  type StratusEvent,
  type TimerHandle,
} from '@stratus/core';
import { categoryOf } from '../backend.js';
import { CommandBus } from '../command-bus.js';
import { DuplicateEventIdError, WrongExpectedVersionError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import type { ProcessContext, ProcessDefinition, ProcessEvent, ProcessOutcome } from './definition.js';
import { InvalidProcessOutcomeError, ProcessDispatchError } from './errors.js';
import { derivedId } from './ids.js';
import {
  DISPATCHED_RECORD,
  type DispatchedRecord,
  emptyFold,
  foldOnto,
  instanceOf,
  type PendingMessage,
  type ProcessFold,
  type ProcessInstance,
  type ProcessRecord,
  pendingId,
  type RecordedCommand,
  type RecordedTimeout,
  STEP_RECORD,
  type StepRecord,
} from './process-stream.js';
import {
  type CommandSender,
  commandBusSender,
  type TimeoutMessage,
  type TimeoutScheduler,
} from './senders.js';

export interface ProcessManagerOptions<State, Event extends ProcessEvent> {
  readonly definition: ProcessDefinition<State, Event>;
  /** Where the process streams live (any backend). */
  readonly store: EventStore;
  /** Where commands go once recorded. */
  readonly commands: CommandSender | CommandBus;
  /** Needed when the definition schedules timeouts. */
  readonly timeouts?: TimeoutScheduler;
  /** Attempts when another instance handled an event of the same process first (reload, decide again); default 5. */
  readonly maxAttempts?: number;
  /** Default the store's clock. */
  readonly clock?: Clock;
  /**
   * Keeps the instances this manager recently wrote in process, so their next event is decided without reading
   * the stream again; off unless given. An instance another manager (another process) changed meanwhile is
   * caught by the step append's expected version: the event is then decided again on a fresh read.
   */
  readonly cache?: ProcessCacheOptions;
}

export interface ProcessCacheOptions {
  /** Beyond this many, the instance written longest ago is dropped; default 10,000. */
  readonly maxEntries?: number;
  /**
   * Defers the record that an instance's messages were sent: it rides on the instance's next step (in the step's
   * `sent`, no append of its own), or is appended on its own once this many milliseconds passed without one (and
   * by `recordSent`). Saves an append per step that sends anything. The price: a crash within that time leaves
   * messages sent but not marked, so the next load of their process sends them again, with the same ids for the
   * receivers' duplicate detection (as a crash between a send and its mark does anyway). Off unless given.
   */
  readonly deferSentMarksMs?: number;
}

/** What became of one event or timeout. */
export type ProcessResult<State> =
  | {
      readonly outcome: 'started' | 'handled';
      readonly processId: string;
      readonly state: State;
      readonly version: number;
      readonly completed: boolean;
      /** Ids of the commands this event produced (sent by the time the result is returned). */
      readonly commandIds: readonly string[];
    }
  | {
      readonly outcome: 'duplicate' | 'ignored';
      readonly processId: string;
      readonly reason: IgnoredReason;
    }
  | { readonly outcome: 'unrouted'; readonly processId: undefined };

/**
 * Why an event changed nothing: handled before; its process is over; it would need a process that was never
 * started; a timeout that was cancelled, superseded, or belongs to a completed process.
 */
export type IgnoredReason = 'duplicate' | 'completed' | 'not-started' | 'stale-timeout';

type ProcessManagerEventDetail =
  | { readonly type: 'started'; readonly processId: string; readonly eventId: string }
  | {
      readonly type: 'handled';
      readonly processId: string;
      readonly eventId: string;
      readonly eventType: string;
      readonly version: number;
      readonly commands: number;
      readonly timeouts: number;
    }
  | { readonly type: 'dispatched'; readonly processId: string; readonly ids: readonly string[] }
  | {
      readonly type: 'dispatch-failed';
      readonly processId: string;
      readonly pending: number;
      readonly error: unknown;
    }
  | {
      /** A deferred mark (ProcessCacheOptions.deferSentMarksMs) could not be appended; it is tried again later. */
      readonly type: 'mark-failed';
      readonly processId: string;
      readonly ids: readonly string[];
      readonly error: unknown;
    }
  | { readonly type: 'completed'; readonly processId: string }
  | { readonly type: 'duplicate-ignored'; readonly processId: string; readonly eventId: string }
  | {
      readonly type: 'ignored';
      readonly processId: string;
      readonly eventId: string;
      readonly reason: Exclude<IgnoredReason, 'duplicate'>;
    }
  | { readonly type: 'conflict'; readonly processId: string; readonly attempt: number };

export type ProcessManagerEvent = StratusEvent & {
  readonly component: 'process-manager';
} & ProcessManagerEventDetail;

/**
 * Runs a process definition: routes each event to its process instance by correlation id, decides, and stores
 * the new state together with the commands and timeouts to send in one append (optimistic concurrency on the
 * process stream, so a concurrent handler of the same process makes it reload and decide again). Only after
 * that append commits are the messages sent, then marked sent; whatever was recorded but not marked is sent
 * first whenever the process loads again, so a crash between commit and send loses nothing, and the
 * deterministic ids make a resend a duplicate the receiver detects (the CQRS Journey's undispatched-messages
 * outbox, kept in the process's own stream so it works on every event store backend).
 */
export class ProcessManager<State, Event extends ProcessEvent = ProcessEvent> {
  readonly name: string;
  readonly definition: ProcessDefinition<State, Event>;
  readonly events = new EventEmitter<ProcessManagerEvent>();
  readonly #store: EventStore;
  readonly #commands: CommandSender;
  readonly #timeouts: TimeoutScheduler | undefined;
  readonly #maxAttempts: number;
  readonly #clock: Clock;
  readonly #startedBy: ReadonlySet<string>;
  readonly #cache: RecentFolds<State> | undefined;
  readonly #deferSentMarksMs: number | undefined;
  /** Sent messages whose mark is deferred, by process id, in send order, with the timer that appends the mark. */
  readonly #unmarked = new Map<string, { ids: string[]; timer: TimerHandle }>();
  /** Deferred marks being appended on their own. */
  readonly #marking = new Set<Promise<void>>();

  constructor(options: ProcessManagerOptions<State, Event>) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    const { definition, store, commands, timeouts, maxAttempts = 5, cache } = options;
    if (typeof definition !== 'object' || definition === null)
      throw new InvalidOptionsError('definition', 'expected an object');
    const { name } = definition;
    if (typeof name !== 'string' || name.length === 0 || name.includes('-')) {
      throw new InvalidOptionsError('definition.name', 'expected a non-empty string without "-"');
    }
    if (!Array.isArray(definition.startedBy) || definition.startedBy.some((t) => typeof t !== 'string')) {
      throw new InvalidOptionsError('definition.startedBy', 'expected an array of event types');
    }
    assertFunction('definition.correlate', definition.correlate);
    assertFunction('definition.initialState', definition.initialState);
    assertFunction('definition.handle', definition.handle);
    if (typeof store !== 'object' || store === null || typeof store.appendToStream !== 'function') {
      throw new InvalidOptionsError('store', 'expected an EventStore');
    }
    if (commands instanceof CommandBus) this.#commands = commandBusSender(commands);
    else if (typeof commands === 'object' && commands !== null && typeof commands.send === 'function')
      this.#commands = commands;
    else throw new InvalidOptionsError('commands', 'expected a CommandBus or a CommandSender');
    if (
      timeouts !== undefined &&
      (typeof timeouts !== 'object' || typeof timeouts?.schedule !== 'function')
    ) {
      throw new InvalidOptionsError('timeouts', 'expected a TimeoutScheduler');
    }
    assertCount('maxAttempts', maxAttempts, 1);
    if (cache !== undefined) {
      if (typeof cache !== 'object' || cache === null)
        throw new InvalidOptionsError('cache', 'expected an object');
      const { maxEntries = 10_000, deferSentMarksMs } = cache;
      assertCount('cache.maxEntries', maxEntries, 1);
      if (deferSentMarksMs !== undefined) assertDuration('cache.deferSentMarksMs', deferSentMarksMs);
      this.#cache = new RecentFolds(maxEntries);
      this.#deferSentMarksMs = deferSentMarksMs;
    }
    this.name = name;
    this.definition = definition;
    this.#store = store;
    this.#timeouts = timeouts;
    this.#maxAttempts = maxAttempts;
    this.#clock = options.clock ?? store.clock;
    this.#startedBy = new Set(definition.startedBy);
  }

  streamName(processId: string): string {
    if (typeof processId !== 'string' || processId.length === 0)
      throw new InvalidOptionsError('processId', 'expected a non-empty string');
    return `${this.name}-${processId}`;
  }

  /** Routes an event to its process (by the definition's correlate) and handles it there. */
  async handle(event: Event): Promise<ProcessResult<State>> {
    checkEvent(event);
    // The manager's own records are in the store too: a subscription to everything must not feed them back.
    if (event.streamName !== undefined && categoryOf(event.streamName) === this.name) {
      return { outcome: 'unrouted', processId: undefined };
    }
    const processId = this.definition.correlate(event);
    if (processId === undefined) return { outcome: 'unrouted', processId: undefined };
    if (typeof processId !== 'string' || processId.length === 0) {
      throw new InvalidProcessOutcomeError(
        this.name,
        String(processId),
        'correlate returned a non-string id',
      );
    }
    return this.#run(processId, event, undefined);
  }

  /** Brings a timeout back to its process (from a TimeoutScheduler's delivery). */
  async deliverTimeout(timeout: TimeoutMessage): Promise<ProcessResult<State>> {
    if (typeof timeout !== 'object' || timeout === null)
      throw new InvalidOptionsError('timeout', 'expected a timeout message');
    if (timeout.processName !== this.name)
      throw new InvalidOptionsError('timeout.processName', `expected "${this.name}"`);
    for (const field of ['processId', 'timeoutId', 'type'] as const) {
      if (typeof timeout[field] !== 'string' || timeout[field].length === 0)
        throw new InvalidOptionsError(`timeout.${field}`, 'expected a non-empty string');
    }
    const event = { id: timeout.timeoutId, type: timeout.type, data: timeout.data } as Event;
    return this.#run(timeout.processId, event, timeout.timeoutId);
  }

  /** Loads a process and sends whatever it recorded but has not sent yet. */
  async load(processId: string): Promise<ProcessInstance<State>> {
    const instance = await this.read(processId);
    if (instance.pending.length > 0) await this.#dispatch(instance, instance.version);
    return { ...instance, pending: [] };
  }

  /** The process as stored, without sending anything (for queries and tests). */
  async read(processId: string): Promise<ProcessInstance<State>> {
    return instanceOf(await this.#readFold(processId));
  }

  async #readFold(processId: string): Promise<ProcessFold<State>> {
    const records = await this.#store.readStream(this.streamName(processId));
    const fold = foldOnto(emptyFold(processId, this.definition.initialState(processId)), records);
    // Sent by this manager with the mark deferred: not pending, whatever the stream says yet.
    const deferred = this.#unmarked.get(processId)?.ids;
    return deferred === undefined ? fold : foldOnto(fold, [sentRecord(deferred, fold.version)]);
  }

  /**
   * The cached fold, unless the event is a timeout it does not know: another instance may have scheduled that
   * meanwhile, and this fold would drop it as stale without appending anything that could conflict.
   */
  #cachedFold(
    processId: string,
    event: Event,
    timeoutId: string | undefined,
  ): ProcessFold<State> | undefined {
    const fold = this.#cache?.get(processId);
    if (fold === undefined || timeoutId === undefined) return fold;
    return fold.liveTimeouts.get(event.type)?.id === timeoutId ? fold : undefined;
  }

  /**
   * Sends the pending messages of every process of this manager (after a crash, without waiting for each
   * process's next event). Returns how many processes had some.
   */
  async flushAll(): Promise<number> {
    let flushed = 0;
    let after: string | undefined;
    for (;;) {
      const streams = await this.#store.listStreams({ category: this.name, limit: 100, after });
      for (const stream of streams) {
        const processId = stream.streamName.slice(this.name.length + 1);
        const instance = await this.read(processId);
        if (instance.pending.length === 0) continue;
        await this.#dispatch(instance, instance.version);
        flushed++;
      }
      if (streams.length < 100) return flushed;
      after = streams[streams.length - 1]?.streamName;
    }
  }

  async #run(processId: string, event: Event, timeoutId: string | undefined): Promise<ProcessResult<State>> {
    const streamName = this.streamName(processId);
    // An event that starts processes, for a process this manager has not cached, most likely starts a new one:
    // the first attempt takes the stream to be empty without reading it. If it is not, the step's append fails
    // (or finds this very step stored) and the event is handled again on a real read, without using up an attempt.
    let guessNew = timeoutId === undefined && this.#startedBy.has(event.type);
    for (let attempt = 1; ; attempt++) {
      const cached = this.#cachedFold(processId, event, timeoutId);
      const guessing = guessNew && cached === undefined;
      guessNew = false;
      if (guessing) attempt--;
      let fold =
        cached ??
        (guessing
          ? emptyFold(processId, this.definition.initialState(processId))
          : await this.#readFold(processId));
      let instance = instanceOf(fold);
      if (instance.pending.length > 0) {
        const marker = await this.#dispatch(instance, instance.version);
        // Deferred, the mark rides on the step below: the fold goes on without these messages pending.
        if (this.#deferSentMarksMs !== undefined && marker !== undefined) {
          fold = foldOnto(fold, [marker]);
          instance = instanceOf(fold);
        }
      }
      const ignored = this.#whyIgnored(instance, event, timeoutId);
      if (ignored !== undefined) {
        if (ignored === 'duplicate') this.#emit({ type: 'duplicate-ignored', processId, eventId: event.id });
        else this.#emit({ type: 'ignored', processId, eventId: event.id, reason: ignored });
        return { outcome: ignored === 'duplicate' ? 'duplicate' : 'ignored', processId, reason: ignored };
      }
      const now = this.#clock.now();
      const context: ProcessContext = {
        processId,
        now,
        version: instance.version,
        isTimeout: timeoutId !== undefined,
        id: (key: string) => derivedId(event.id, this.name, processId, key),
      };
      let decided: ProcessOutcome<State, Event>;
      let step: StepRecord;
      const marking = this.#unmarked.get(processId)?.ids.slice();
      try {
        decided = this.definition.handle(instance.state, event, context) ?? {};
        step = this.#stepOf(processId, event, decided, context, marking);
      } catch (error) {
        if (cached === undefined && !guessing) throw error;
        // The cached (or guessed) state may be behind the stream, in a stage that refuses this event: decide on a
        // fresh read.
        this.#cache?.delete(processId);
        continue;
      }
      try {
        const appended = await this.#store.appendToStream(
          streamName,
          [{ type: STEP_RECORD, data: step, id: context.id('$step') }],
          {
            expectedVersion: instance.version,
            causationId: event.id,
            ...(typeof event.metadata?.correlationId === 'string'
              ? { correlationId: event.metadata.correlationId }
              : {}),
          },
        );
        // Not written: this very step was stored before (a retry after a lost reply); reload sees it handled.
        if (!appended.written) {
          this.#cache?.delete(processId);
          continue;
        }
        if (marking !== undefined) this.#marked(processId, marking);
        const started = instance.version === 0;
        if (started) this.#emit({ type: 'started', processId, eventId: event.id });
        const version = appended.nextExpectedVersion;
        this.#emit({
          type: 'handled',
          processId,
          eventId: event.id,
          eventType: event.type,
          version,
          commands: step.commands.length,
          timeouts: step.timeouts.length,
        });
        if (step.completed) this.#emit({ type: 'completed', processId });
        const pending: PendingMessage[] = [
          ...step.commands.map((command) => ({ kind: 'command' as const, command })),
          ...step.timeouts.map((timeout) => ({ kind: 'timeout' as const, timeout })),
        ];
        const marker =
          pending.length > 0 ? await this.#dispatch({ ...instance, pending }, version) : undefined;
        // Not cached if anything was appended between the step and its marker: this fold would miss it. (A
        // deferred mark is not appended: it stands at the step's version.)
        const markedAt = this.#deferSentMarksMs === undefined ? version + 1 : version;
        if (pending.length > 0 && marker?.streamVersion !== markedAt) this.#cache?.delete(processId);
        else
          this.#cache?.set(
            processId,
            foldOnto(fold, [storedStep(step, version), ...(marker ? [marker] : [])]),
          );
        return {
          outcome: started ? 'started' : 'handled',
          processId,
          state: 'state' in step ? (decided.state as State) : instance.state,
          version,
          completed: step.completed,
          commandIds: step.commands.map((command) => command.id),
        };
      } catch (error) {
        // A conflict, a failed send, anything: whatever this manager has cached may not be what is stored.
        this.#cache?.delete(processId);
        if (!(error instanceof WrongExpectedVersionError) || attempt >= this.#maxAttempts) throw error;
        // A wrong guess of a new process is no concurrent change.
        if (!guessing) this.#emit({ type: 'conflict', processId, attempt });
      }
    }
  }

  #whyIgnored(
    instance: ProcessInstance<State>,
    event: Event,
    timeoutId: string | undefined,
  ): IgnoredReason | undefined {
    if (instance.handledEventIds.has(event.id)) return 'duplicate';
    if (timeoutId !== undefined) {
      const live = instance.liveTimeouts.get(event.type);
      return live?.id === timeoutId && !instance.completed ? undefined : 'stale-timeout';
    }
    if (instance.completed) return 'completed';
    if (instance.version === 0 && !this.#startedBy.has(event.type)) return 'not-started';
    return undefined;
  }

  /** Validates the definition's outcome and turns it into the record to append. */
  #stepOf(
    processId: string,
    event: Event,
    outcome: ProcessOutcome<State, Event>,
    context: ProcessContext,
    sent: readonly string[] | undefined,
  ): StepRecord {
    const invalid = (reason: string) => new InvalidProcessOutcomeError(this.name, processId, reason);
    if (typeof outcome !== 'object') throw invalid('expected an object or undefined');
    const commands: RecordedCommand[] = (outcome.send ?? []).map((command, i) => {
      if (typeof command?.type !== 'string' || command.type.length === 0)
        throw invalid(`send[${i}].type: expected a non-empty string`);
      if (command.data === undefined) throw invalid(`send[${i}].data: missing`);
      const id = command.id ?? context.id(`command:${i}`);
      if (typeof id !== 'string' || id.length === 0 || id.length > 200)
        throw invalid(`send[${i}].id: expected 1 to 200 characters`);
      if (command.correlationId !== undefined && typeof command.correlationId !== 'string')
        throw invalid(`send[${i}].correlationId: expected a string`);
      if (command.expiresAt !== undefined && !Number.isFinite(command.expiresAt))
        throw invalid(`send[${i}].expiresAt: expected epoch milliseconds`);
      return {
        id,
        type: command.type,
        data: command.data,
        ...(command.correlationId === undefined ? {} : { correlationId: command.correlationId }),
        ...(command.expiresAt === undefined ? {} : { expiresAt: command.expiresAt }),
      };
    });
    const schedule = outcome.schedule ?? [];
    if (schedule.length > 0 && this.#timeouts === undefined)
      throw invalid('it schedules timeouts, but the manager has no timeout scheduler');
    const timeouts: RecordedTimeout[] = schedule.map((timeout, i) => {
      const type = timeout?.event?.type;
      if (typeof type !== 'string' || type.length === 0)
        throw invalid(`schedule[${i}].event.type: expected a non-empty string`);
      if (timeout.event.data === undefined) throw invalid(`schedule[${i}].event.data: missing`);
      if ((timeout.at === undefined) === (timeout.afterMs === undefined))
        throw invalid(`schedule[${i}]: give either at or afterMs`);
      const dueAt = timeout.at ?? context.now + (timeout.afterMs as number);
      if (!Number.isFinite(dueAt) || (timeout.afterMs !== undefined && timeout.afterMs < 0))
        throw invalid(`schedule[${i}]: expected a finite time`);
      return { id: context.id(`timeout:${type}`), type, data: timeout.event.data, dueAt };
    });
    if (new Set(timeouts.map((t) => t.type)).size !== timeouts.length)
      throw invalid('two timeouts of the same event type in one outcome');
    const cancelledTimeouts = outcome.cancelTimeouts ?? [];
    if (!Array.isArray(cancelledTimeouts) || cancelledTimeouts.some((t) => typeof t !== 'string'))
      throw invalid('cancelTimeouts: expected an array of event types');
    return {
      eventId: event.id,
      eventType: event.type,
      ...(outcome.state === undefined ? {} : { state: outcome.state }),
      commands,
      timeouts,
      cancelledTimeouts: [...cancelledTimeouts],
      completed: outcome.complete === true,
      ...(sent === undefined ? {} : { sent }),
    };
  }

  /**
   * Sends pending messages in order, then records which went out (also when only some did). Returns that record
   * as appended; undefined when none was (nothing sent, or the same record was already stored). With deferred
   * marks nothing is appended: the record returned stands at `version` (the stream's as far as this call knows).
   */
  async #dispatch(instance: ProcessInstance<State>, version: number): Promise<ProcessRecord | undefined> {
    const { processId } = instance;
    const sent: string[] = [];
    let failure: unknown;
    for (const message of instance.pending) {
      try {
        if (message.kind === 'command') {
          const { command } = message;
          await this.#commands.send(command);
        } else {
          const scheduler = this.#timeouts;
          if (scheduler === undefined)
            throw new InvalidOptionsError('timeouts', 'a recorded timeout needs a timeout scheduler');
          await scheduler.schedule({ processName: this.name, processId, ...timeoutFields(message.timeout) });
        }
        sent.push(pendingId(message));
      } catch (error) {
        failure = error;
        break;
      }
    }
    let marker: ProcessRecord | undefined;
    if (sent.length > 0 && this.#deferSentMarksMs !== undefined) {
      this.#defer(processId, sent);
      marker = sentRecord(sent, version);
    } else if (sent.length > 0) {
      marker = await this.#markDispatched(processId, sent);
    }
    if (sent.length > 0) this.#emit({ type: 'dispatched', processId, ids: sent });
    if (failure !== undefined) {
      const pending = instance.pending.length - sent.length;
      this.#emit({ type: 'dispatch-failed', processId, pending, error: failure });
      throw new ProcessDispatchError(this.name, processId, pending, failure);
    }
    return marker;
  }

  async #markDispatched(processId: string, ids: readonly string[]): Promise<ProcessRecord | undefined> {
    const record: DispatchedRecord = { ids };
    let marker: ProcessRecord | undefined;
    try {
      // Any version: marks only add to what is known to be sent, whatever was appended meanwhile. The id is
      // derived from what was sent, so two instances flushing the same messages record it once.
      const appended = await this.#store.appendToStream(
        this.streamName(processId),
        [
          {
            type: DISPATCHED_RECORD,
            data: record,
            id: derivedId(ids[0] ?? processId, this.name, processId, '$sent', ...ids),
          },
        ],
        { expectedVersion: 'stream-exists' },
      );
      if (appended.written)
        marker = { type: DISPATCHED_RECORD, data: record, streamVersion: appended.nextExpectedVersion };
    } catch (error) {
      if (!(error instanceof DuplicateEventIdError)) throw error;
    }
    return marker;
  }

  /**
   * Appends now the deferred marks of every message this manager sent (ProcessCacheOptions.deferSentMarksMs), and
   * waits for those already being appended: call it before stopping, so that a restart sends nothing again.
   */
  async recordSent(): Promise<void> {
    for (const processId of [...this.#unmarked.keys()]) this.#appendMarks(processId);
    while (this.#marking.size > 0) await Promise.all(this.#marking);
  }

  #defer(processId: string, ids: readonly string[]): void {
    const entry = this.#unmarked.get(processId);
    if (entry !== undefined) {
      entry.ids.push(...ids);
      return;
    }
    const delayMs = this.#deferSentMarksMs as number;
    const timer = this.#clock.setTimeout(() => this.#appendMarks(processId), delayMs, { unref: true });
    this.#unmarked.set(processId, { ids: [...ids], timer });
  }

  /** These deferred marks are stored now (a step carried them). */
  #marked(processId: string, ids: readonly string[]): void {
    const entry = this.#unmarked.get(processId);
    if (entry === undefined) return;
    const stored = new Set(ids);
    entry.ids = entry.ids.filter((id) => !stored.has(id));
    if (entry.ids.length > 0) return;
    this.#clock.clearTimeout(entry.timer);
    this.#unmarked.delete(processId);
  }

  /** The deferred marks of a process, appended on their own (no step came to carry them). */
  #appendMarks(processId: string): void {
    const entry = this.#unmarked.get(processId);
    if (entry === undefined) return;
    this.#clock.clearTimeout(entry.timer);
    this.#unmarked.delete(processId);
    const appending = this.#markDispatched(processId, entry.ids).then(
      (marker) => {
        const cached = this.#cache?.get(processId);
        if (cached === undefined || marker === undefined) return;
        // The cached fold already counts these as sent; it only moves to the marker's version, if it is just behind.
        if (cached.version === marker.streamVersion - 1)
          this.#cache?.set(processId, foldOnto(cached, [marker]));
        else this.#cache?.delete(processId);
      },
      // The store refused (down, the stream gone): try again later; until then these count as sent here.
      (error: unknown) => {
        this.#emit({ type: 'mark-failed', processId, ids: entry.ids, error });
        this.#defer(processId, entry.ids);
      },
    );
    this.#marking.add(appending);
    void appending.finally(() => this.#marking.delete(appending));
  }

  #emit(detail: ProcessManagerEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'process-manager',
      name: this.name,
      at: this.#clock.now(),
      ...detail,
    } as ProcessManagerEvent);
  }
}

/** Recently written folds by process id, the oldest write dropped first (Map order is write order). */
class RecentFolds<State> {
  readonly #maxEntries: number;
  readonly #folds = new Map<string, ProcessFold<State>>();

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  get(processId: string): ProcessFold<State> | undefined {
    return this.#folds.get(processId);
  }

  set(processId: string, fold: ProcessFold<State>): void {
    this.#folds.delete(processId);
    this.#folds.set(processId, fold);
    if (this.#folds.size > this.#maxEntries) this.#folds.delete(this.#folds.keys().next().value as string);
  }

  delete(processId: string): void {
    this.#folds.delete(processId);
  }
}

/** A record that these messages were sent, at `streamVersion` (deferred: not appended, or not yet). */
function sentRecord(ids: readonly string[], streamVersion: number): ProcessRecord {
  return { type: DISPATCHED_RECORD, data: { ids: [...ids] } satisfies DispatchedRecord, streamVersion };
}

/** The step as a read would give it (JSON), whatever the definition does later to what it returned. */
function storedStep(step: StepRecord, streamVersion: number): ProcessRecord {
  return { type: STEP_RECORD, data: JSON.parse(JSON.stringify(step)), streamVersion };
}

function timeoutFields(timeout: RecordedTimeout) {
  return { timeoutId: timeout.id, type: timeout.type, data: timeout.data, dueAt: timeout.dueAt };
}

function checkEvent(event: unknown): void {
  if (typeof event !== 'object' || event === null)
    throw new InvalidOptionsError('event', 'expected an event');
  const { id, type } = event as { id?: unknown; type?: unknown };
  if (typeof id !== 'string' || id.length === 0)
    throw new InvalidOptionsError('event.id', 'expected a non-empty string');
  if (typeof type !== 'string' || type.length === 0)
    throw new InvalidOptionsError('event.type', 'expected a non-empty string');
}
