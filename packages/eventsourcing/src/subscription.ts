import {
  assertDuration,
  assertFunction,
  assertInteger,
  type Backoff,
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  type StoreError,
  StoreFailures,
  type StratusEvent,
  type TimerHandle,
  type Unsubscribe,
} from '@stratus/core';
import type { ParkedEvent, ParkedSelection, RecordedEvent } from './backend.js';
import { PoisonEventError } from './errors.js';
import type { EventStore } from './event-store.js';
import { MemoryParkedEvents } from './memory/memory-parked-events.js';
import { Parking, type ParkingEventDetail } from './parking.js';

const DEFAULT_BACKOFF = exponentialBackoff({ initialMs: 100, maxMs: 30_000 });

export interface SubscriptionOptions<E extends RecordedEvent = RecordedEvent> {
  /**
   * Names the subscription's checkpoint in the store: it resumes after the last position it handled. Without a
   * name nothing is stored and it starts from `from` every time.
   */
  readonly name?: string;
  /** Where to start when there is no checkpoint: 'start' (default), 'end' (only new events) or after a position. */
  readonly from?: 'start' | 'end' | { readonly after: number };
  /** Called for each event in global order (so in order per stream); the next waits for it. */
  readonly handler?: (event: E) => void | Promise<void>;
  /** Instead of `handler`: called with each batch read (up to `batchSize` events), all or nothing. */
  readonly handleBatch?: (events: readonly E[]) => void | Promise<void>;
  /** Events read per round trip; default 500. */
  readonly batchSize?: number;
  /**
   * Safety poll while caught up, in case a wake-up is lost (a dropped LISTEN connection); default 1000 ms.
   * Appends normally wake the subscription at once through the store's watch.
   */
  readonly pollIntervalMs?: number;
  /**
   * Once an append wakes a caught-up subscription, wait this long before reading, so a burst of appends is read as one
   * batch: fewer reads and checkpoints under load for a little more latency. Default 0.
   */
  readonly appendDelayMs?: number;
  /**
   * Store the checkpoint at most this often while events flow (and always once caught up, and on stop): fewer writes
   * for a busy subscription, at the price of replaying up to this much after a crash. Default 0: after every batch.
   */
  readonly checkpointEveryMs?: number;
  /** Delays between retries after the handler throws (the event is retried, then the ones after it); default exponential from 100 ms up to 30 s. */
  readonly retryBackoff?: Backoff;
  /**
   * Attempts at one event before it counts as poison; default 10 (about 50 s of retries with the default backoff).
   * A batch that fails this often is handled again one event at a time, to find the event at fault.
   */
  readonly maxAttempts?: number;
  /**
   * What becomes of a poison event. 'park' (default): it is stored aside with its error (listed, retried and skipped
   * through `parked()`, `retryParked()`, `skipParked()`, or the store's methods of the same names from another
   * process), an `event-parked` event is emitted, and the subscription goes on; later events sharing one of its
   * ordering keys are parked behind it, so each key keeps its order. 'stop': the subscription stops and `done`
   * rejects with PoisonEventError.
   */
  readonly onPoison?: 'park' | 'stop';
  /** The ordering keys of an event: events of one key are handled in order even when one is parked. Default its stream. */
  readonly keysOf?: (event: E) => string | readonly string[];
}

type SubscriptionEventDetail =
  | { readonly type: 'caught-up'; readonly position: number }
  | {
      readonly type: 'handler-failed';
      readonly position: number;
      readonly error: unknown;
      readonly attempt: number;
    }
  | { readonly type: 'checkpointed'; readonly position: number }
  /** The store failed (a read, a checkpoint, the parked events). */
  | StoreError
  | ParkingEventDetail
  | { readonly type: 'stopped'; readonly error: unknown };

export type SubscriptionEvent = StratusEvent & {
  readonly component: 'subscription';
} & SubscriptionEventDetail;

/**
 * A catch-up subscription: reads every event after its checkpoint, then follows new appends live. At least once:
 * the checkpoint is stored after each batch, so a crash replays at most one batch; handlers should be idempotent
 * (or store the position with their own writes, as projections do). An event the handler keeps failing on is parked
 * (see `onPoison`) so that one bad event never holds up the others. A store that fails (the database restarting) is
 * tried again with backoff, a `store-error` event each time, for as long as it takes: the subscription never stops
 * for it.
 */
export class Subscription<E extends RecordedEvent = RecordedEvent> {
  readonly name: string;
  readonly events = new EventEmitter<SubscriptionEvent>();
  /** Resolves when the subscription first reaches the end of the log. */
  readonly caughtUp: Promise<void>;
  /** Settles when the subscription stops: after stop(), or rejected on a poison event with `onPoison: 'stop'`. */
  readonly done: Promise<void>;
  #position = 0;
  #stopped = false;
  #wake: (() => void) | undefined;
  /** An append was signalled since the last read. */
  #appended = false;
  #timer: TimerHandle | undefined;
  /** Consecutive failed attempts at the current event or batch. */
  #attempt = 0;
  #previousDelay = 0;
  /** Batches up to this position are handled one event at a time (a batch failed maxAttempts times). */
  #isolateThrough = 0;
  /** When to look at the parked events again (retries asked for, skips from another process). */
  #parkedCheckAt = 0;
  readonly #storeFailures = new StoreFailures();
  readonly #parking: Parking<E>;
  readonly #store: EventStore;
  readonly #clock: Clock;
  readonly #options: SubscriptionOptions<E>;
  readonly #maxAttempts: number;
  #reachedEnd!: () => void;

  constructor(store: EventStore, options: SubscriptionOptions<E>) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    if ((options.handler === undefined) === (options.handleBatch === undefined)) {
      throw new InvalidOptionsError('handler', 'give either handler or handleBatch');
    }
    if (options.handler !== undefined) assertFunction('handler', options.handler);
    if (options.handleBatch !== undefined) assertFunction('handleBatch', options.handleBatch);
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name.length === 0)) {
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    }
    const { from = 'start', batchSize = 500, pollIntervalMs = 1000, checkpointEveryMs = 0 } = options;
    if (from !== 'start' && from !== 'end') {
      if (typeof from !== 'object' || from === null)
        throw new InvalidOptionsError('from', "expected 'start', 'end' or { after }");
      assertInteger('from.after', from.after, 0);
    }
    assertInteger('batchSize', batchSize, 1);
    assertDuration('pollIntervalMs', pollIntervalMs, { allowZero: false });
    assertDuration('checkpointEveryMs', checkpointEveryMs);
    if (options.appendDelayMs !== undefined) assertDuration('appendDelayMs', options.appendDelayMs);
    this.#maxAttempts = options.maxAttempts ?? 10;
    assertInteger('maxAttempts', this.#maxAttempts, 1);
    if (options.onPoison !== undefined && options.onPoison !== 'park' && options.onPoison !== 'stop')
      throw new InvalidOptionsError('onPoison', "expected 'park' or 'stop'");
    if (options.keysOf !== undefined) assertFunction('keysOf', options.keysOf);
    this.#store = store;
    this.#clock = store.clock;
    this.#options = options;
    this.name = options.name ?? 'anonymous';
    // Without a name nothing is stored, parked events included: they last as long as the subscription.
    this.#parking = new Parking<E>({
      subscription: this.name,
      events: store,
      ...(options.name === undefined ? { parkedIn: new MemoryParkedEvents() } : {}),
      keysOf: options.keysOf,
      emit: (detail) => this.#emit(detail),
      onRequest: () => this.#lookAtParkedNow(),
    });
    this.caughtUp = new Promise((resolve) => {
      this.#reachedEnd = resolve;
    });
    this.done = this.#run();
    // The caller may only await caughtUp: a failure to start must not go unhandled.
    this.done.catch(() => {});
  }

  /** The position of the last event handled. */
  get position(): number {
    return this.#position;
  }

  /** How many events are parked (as of the subscription's last look at them). */
  get parkedCount(): number {
    return this.#parking.count;
  }

  /** Consecutive failed attempts at the event (or batch) in hand: 0 while the handler succeeds. */
  get failingAttempts(): number {
    return this.#attempt;
  }

  /** Consecutive failures of the store (reads, checkpoints): 0 while it answers. */
  get storeFailures(): number {
    return this.#storeFailures.count;
  }

  /** The parked events, in position order. */
  parked(): Promise<ParkedEvent[]> {
    return this.#parking.load();
  }

  /** Asks for parked events (default all) to be handled again, in order; resolves with how many were marked. */
  retryParked(selection: ParkedSelection = 'all'): Promise<number> {
    return this.#parking.requestRetry(selection);
  }

  /** Drops parked events (default all) without handling them; resolves with how many were dropped. */
  skipParked(selection: ParkedSelection = 'all'): Promise<number> {
    return this.#parking.skip(selection);
  }

  /** Stops after the event being handled (if any); resolves when it has stopped. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.done.catch(() => {});
  }

  async #run(): Promise<void> {
    const { batchSize = 500, checkpointEveryMs = 0 } = this.#options;
    let opened = false;
    let stopWatching: Unsubscribe | undefined;
    let dirty = false;
    // The checkpoint write of a batch overlaps the read of the next one: at most one in flight, stored in order.
    let saving: Promise<void> = Promise.resolve();
    let savedAt = Number.NEGATIVE_INFINITY;
    const save = async () => {
      await saving;
      saving = this.#checkpoint(this.#position);
      // Observed here so a failure between two awaits is not reported as unhandled; the await rethrows it.
      saving.catch(() => {});
      savedAt = this.#clock.now();
      dirty = false;
    };
    try {
      while (!this.#stopped) {
        try {
          if (!opened) {
            await this.#open();
            opened = true;
          }
          stopWatching ??= await this.#store.backend.watch(() => {
            this.#appended = true;
            this.#wake?.();
          });
          if (this.#parking.count > 0 && this.#clock.now() >= this.#parkedCheckAt) {
            this.#parkedCheckAt = this.#clock.now() + (this.#options.pollIntervalMs ?? 1000);
            await this.#parking.retry(
              (event) => this.#handle([event]),
              () => this.#stopped,
            );
          }
          this.#appended = false;
          const batch = await this.#store.readAll<E>({
            after: this.#position,
            maxCount: batchSize,
            following: true,
          });
          this.#storeFailures.succeeded();
          if (batch.length === 0) {
            // Caught up, the checkpoint still keeps to its interval (a quiet subscription stores it when the interval
            // ends): woken by every append, a subscription would otherwise write one per append.
            const checkpointDueIn = savedAt + checkpointEveryMs - this.#clock.now();
            if (dirty && checkpointDueIn <= 0) await save();
            await saving;
            this.#reachedEnd();
            this.#emit({ type: 'caught-up', position: this.#position });
            const pollMs = this.#options.pollIntervalMs ?? 1000;
            await this.#idle(dirty ? Math.min(pollMs, Math.max(0, checkpointDueIn)) : pollMs);
            // Woken by an append: let the appends close behind it land, to handle them as one batch.
            const delay = this.#options.appendDelayMs ?? 0;
            if (this.#appended && delay > 0) await this.#idle(delay, false);
            continue;
          }
          for (const unit of this.#units(batch)) {
            if (this.#stopped || !(await this.#handleUnit(unit))) break;
            this.#position = (unit[unit.length - 1] as E).globalPosition;
            dirty = true;
          }
          if (dirty && this.#clock.now() - savedAt >= checkpointEveryMs) await save();
        } catch (error) {
          if (error instanceof PoisonEventError) throw error;
          // A checkpoint that failed is written again with the next one.
          const checkpointFailed = await saving.then(
            () => false,
            () => true,
          );
          if (checkpointFailed) {
            saving = Promise.resolve();
            dirty = true;
          }
          const failure = this.#storeFailures.storeError(error);
          this.#emit(failure);
          await this.#idle(failure.retryInMs, false);
        }
      }
      // The last checkpoint on the way out; one that fails only means a replay from the one before.
      try {
        if (dirty) await save();
        await saving;
      } catch (error) {
        this.#emit({ ...this.#storeFailures.storeError(error), retryInMs: 0 });
      }
    } catch (error) {
      this.#emit({ type: 'stopped', error });
      throw error;
    } finally {
      stopWatching?.();
    }
  }

  /** Where to start: the stored checkpoint, else `from`; and the parked events. */
  async #open(): Promise<void> {
    const { name, from = 'start' } = this.#options;
    const stored = name === undefined ? undefined : await this.#store.backend.loadCheckpoint(name);
    this.#position =
      stored ?? (from === 'start' ? 0 : from === 'end' ? await this.#store.headPosition() : from.after);
    await this.#parking.load();
  }

  /** One unit per event, or the whole batch: the position moves past a unit once it is handled (or parked). */
  #units(batch: readonly E[]): (readonly E[])[] {
    const perEvent =
      this.#options.handleBatch === undefined || (batch[0] as E).globalPosition <= this.#isolateThrough;
    return perEvent ? batch.map((event) => [event]) : [batch];
  }

  /**
   * Handles a unit, parking the events that wait behind a parked one; false when it failed and is to be read again
   * after the backoff. Throws PoisonEventError when it failed for the last time and `onPoison` is 'stop'.
   */
  async #handleUnit(unit: readonly E[]): Promise<boolean> {
    const runnable = await this.#parking.parkBlocked(unit);
    if (runnable.length === 0) return true;
    try {
      await this.#handle(runnable);
    } catch (error) {
      const first = runnable[0] as E;
      this.#attempt++;
      this.#emit({ type: 'handler-failed', position: first.globalPosition, error, attempt: this.#attempt });
      if (this.#attempt < this.#maxAttempts) {
        const backoff = this.#options.retryBackoff ?? DEFAULT_BACKOFF;
        this.#previousDelay = backoff.delay(this.#attempt, this.#previousDelay);
        await this.#idle(this.#previousDelay, false);
        return false;
      }
      const attempts = this.#attempt;
      this.#attempt = 0;
      this.#previousDelay = 0;
      if (runnable.length > 1) {
        // A batch: which event is at fault is found by handling them one at a time.
        this.#isolateThrough = (runnable[runnable.length - 1] as E).globalPosition;
        return false;
      }
      if (this.#options.onPoison === 'stop')
        throw new PoisonEventError(this.name, first.globalPosition, attempts, error);
      await this.#parking.parkFailed(first, error, attempts);
      return true;
    }
    this.#attempt = 0;
    this.#previousDelay = 0;
    return true;
  }

  #handle(events: readonly E[]): void | Promise<void> {
    const { handler, handleBatch } = this.#options;
    // With a handler, units are single events.
    return handleBatch === undefined
      ? (handler as NonNullable<typeof handler>)(events[0] as E)
      : handleBatch(events);
  }

  #lookAtParkedNow(): void {
    this.#parkedCheckAt = 0;
    // A caught-up subscription is woken as by an append, to look at once.
    this.#appended = true;
    this.#wake?.();
  }

  async #checkpoint(position: number): Promise<void> {
    const { name } = this.#options;
    if (name === undefined) return;
    await this.#store.backend.storeCheckpoint(name, position);
    this.#emit({ type: 'checkpointed', position });
  }

  /** Waits for `ms`, or for an append when `wakeOnAppend`, or for stop(). */
  #idle(ms: number, wakeOnAppend = true): Promise<void> {
    if (this.#stopped || ms <= 0 || (wakeOnAppend && this.#appended)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#wake = undefined;
        resolve();
      };
      // Not unref'd: a started subscription keeps its process alive until stopped, caught up or not.
      this.#timer = this.#clock.setTimeout(done, ms);
      this.#wake = wakeOnAppend
        ? done
        : () => {
            if (this.#stopped) done();
          };
    });
  }

  #emit(event: SubscriptionEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'subscription',
      name: this.name,
      at: this.#clock.now(),
      ...event,
    } as SubscriptionEvent);
  }
}
