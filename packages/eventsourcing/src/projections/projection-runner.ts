import {
  assertCount,
  assertDuration,
  assertFunction,
  assertInteger,
  type Backoff,
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  randomId,
  StoreFailures,
  type TimerHandle,
  type Unsubscribe,
} from '@stratus/core';
import type { ParkedEvent, ParkedSelection, RecordedEvent } from '../backend.js';
import { PoisonEventError } from '../errors.js';
import type { EventStore } from '../event-store.js';
import { Parking } from '../parking.js';
import type {
  Projection,
  ProjectionLag,
  ProjectionRunnerEvent,
  ProjectionRunnerEventDetail,
  ProjectionRunnerOptions,
} from './projection.js';
import type { ProjectionTarget } from './target.js';

/** How often a runner stores a position it moved over events its view ignores (when no applied batch did). */
const POSITION_STORE_INTERVAL_MS = 1000;

/** Runs the events of `events` through `apply`, synchronously until an apply returns a promise. */
function applyAll<Tx>(
  tx: Tx,
  events: readonly RecordedEvent[],
  from: number,
  apply: (tx: Tx, event: RecordedEvent) => void | Promise<void>,
): void | Promise<void> {
  for (let i = from; i < events.length; i++) {
    const result = apply(tx, events[i] as RecordedEvent);
    if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
      return (result as Promise<void>).then(() => applyAll(tx, events, i + 1, apply));
    }
  }
}

/**
 * Keeps one version of a view up to date: single-active through a lease on the view (renewed while it runs, and
 * checked by every commit, so a runner that lost it cannot write); each batch of events and the position it reaches
 * commit in one transaction, so a crash mid-batch leaves the view as it was and the batch is applied again. A store or
 * view database that fails (a restart, a dropped connection) is tried again with backoff, a `store-error` event each
 * time, for as long as it takes: the runner never stops for it.
 */
export class ProjectionRunner<Tx> {
  readonly owner: string;
  readonly events = new EventEmitter<ProjectionRunnerEvent>();
  /** Resolves the first time the view has applied every event. */
  readonly caughtUp: Promise<void>;
  readonly #store: EventStore;
  readonly #target: ProjectionTarget<Tx>;
  readonly #projection: Projection<Tx>;
  readonly #clock: Clock;
  readonly #batchSize: number;
  readonly #leaseMs: number;
  readonly #pollIntervalMs: number;
  readonly #activate: boolean;
  readonly #types: ReadonlySet<string> | undefined;
  readonly #appendDelayMs: number;
  #position = 0;
  /** The position stored with the view (behind #position while only events the view ignores were read). */
  #stored = 0;
  #storedAt = 0;
  #lastEventAt = 0;
  #heldLease = false;
  /** This version serves reads (it activated, or found itself active). */
  #serving = false;
  #stopped = false;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #timer: TimerHandle | undefined;
  #signalled = false;
  #reachedEnd!: () => void;
  readonly #parking: Parking<RecordedEvent>;
  readonly #backoff: Backoff;
  readonly #maxAttempts: number;
  readonly #onPoison: 'park' | 'stop';
  /** Consecutive failed attempts at the batch (or event) in hand. */
  #attempt = 0;
  #previousDelay = 0;
  /** Events up to this position are applied one per transaction (a batch failed maxAttempts times). */
  #isolateThrough = 0;
  #parkedCheckAt = 0;
  readonly #storeFailures = new StoreFailures();

  constructor(
    store: EventStore,
    target: ProjectionTarget<Tx>,
    projection: Projection<Tx>,
    options: ProjectionRunnerOptions = {},
  ) {
    if (typeof projection !== 'object' || projection === null)
      throw new InvalidOptionsError('projection', 'expected an object');
    if (typeof projection.name !== 'string' || projection.name.length === 0) {
      throw new InvalidOptionsError('projection.name', 'expected a non-empty string');
    }
    assertInteger('projection.version', projection.version, 1);
    assertFunction('projection.setup', projection.setup);
    if ((projection.apply === undefined) === (projection.applyBatch === undefined)) {
      throw new InvalidOptionsError('projection.apply', 'give either apply or applyBatch');
    }
    if (projection.apply !== undefined) assertFunction('projection.apply', projection.apply);
    if (projection.applyBatch !== undefined) assertFunction('projection.applyBatch', projection.applyBatch);
    const {
      owner = `runner-${randomId()}`,
      batchSize = 500,
      leaseMs = 10_000,
      pollIntervalMs = 1000,
    } = options;
    if (typeof owner !== 'string' || owner.length === 0)
      throw new InvalidOptionsError('owner', 'expected a non-empty string');
    assertCount('batchSize', batchSize, 1);
    assertDuration('leaseMs', leaseMs, { allowZero: false });
    assertDuration('pollIntervalMs', pollIntervalMs, { allowZero: false });
    this.#appendDelayMs = options.appendDelayMs ?? 0;
    assertDuration('appendDelayMs', this.#appendDelayMs);
    this.owner = owner;
    this.#store = store;
    this.#target = target;
    this.#projection = projection;
    this.#clock = store.clock;
    this.#batchSize = batchSize;
    this.#leaseMs = leaseMs;
    this.#pollIntervalMs = pollIntervalMs;
    this.#activate = options.activateWhenCaughtUp ?? true;
    this.#types = projection.eventTypes === undefined ? undefined : new Set(projection.eventTypes);
    this.#backoff = options.retryBackoff ?? exponentialBackoff({ initialMs: 100, maxMs: 30_000 });
    this.#maxAttempts = options.maxAttempts ?? 10;
    assertInteger('maxAttempts', this.#maxAttempts, 1);
    this.#onPoison = options.onPoison ?? 'park';
    if (this.#onPoison !== 'park' && this.#onPoison !== 'stop')
      throw new InvalidOptionsError('onPoison', "expected 'park' or 'stop'");
    if (options.keysOf !== undefined) assertFunction('keysOf', options.keysOf);
    this.#parking = new Parking({
      subscription: `projection:${projection.name}@${projection.version}`,
      events: store,
      keysOf: options.keysOf,
      emit: (detail) => this.#emit(detail),
      onRequest: () => this.#lookAtParkedNow(),
    });
    this.caughtUp = new Promise((resolve) => {
      this.#reachedEnd = resolve;
    });
  }

  get name(): string {
    return this.#projection.name;
  }

  get version(): number {
    return this.#projection.version;
  }

  /** The position the view has reached, as this runner last saw it. */
  get position(): number {
    return this.#position;
  }

  /** How many events the view has parked (as of the runner's last look at them). */
  get parkedCount(): number {
    return this.#parking.count;
  }

  /** Consecutive failed attempts at the batch (or event) in hand: 0 while applies succeed. */
  get failingAttempts(): number {
    return this.#attempt;
  }

  /** Consecutive failures of the store or the view's database (reads, the lease): 0 while they answer. */
  get storeFailures(): number {
    return this.#storeFailures.count;
  }

  /** The parked events, in position order. */
  parked(): Promise<ParkedEvent[]> {
    return this.#parking.load();
  }

  /** Asks for parked events (default all) to be applied again, in order; resolves with how many were marked. */
  retryParked(selection: ParkedSelection = 'all'): Promise<number> {
    return this.#parking.requestRetry(selection);
  }

  /** Drops parked events (default all) without applying them; resolves with how many were dropped. */
  skipParked(selection: ParkedSelection = 'all'): Promise<number> {
    return this.#parking.skip(selection);
  }

  /** How far behind the event log the view is. */
  async lag(): Promise<ProjectionLag> {
    const head = await this.#store.headPosition();
    const behind = Math.max(0, head - this.#position);
    return {
      events: behind,
      ms: behind === 0 || this.#lastEventAt === 0 ? 0 : Math.max(0, this.#clock.now() - this.#lastEventAt),
      position: this.#position,
    };
  }

  /**
   * Starts the runner (it first waits for the lease); resolves once it has stopped, or rejects on a poison event
   * with `onPoison: 'stop'`.
   */
  start(): Promise<void> {
    this.#running ??= this.#run();
    return this.#running;
  }

  /** Stops after the batch in progress and gives the lease back. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#running;
  }

  async #run(): Promise<void> {
    const { name, version } = this.#projection;
    let prepared = false;
    let stopWatching: Unsubscribe | undefined;
    try {
      while (!this.#stopped) {
        try {
          if (!prepared) {
            await this.#target.prepare(name, version, (tx) => this.#projection.setup(tx, version));
            await this.#parking.load();
            prepared = true;
          }
          stopWatching ??= await this.#store.backend.watch(() => {
            this.#signalled = true;
            this.#wake?.();
          });
          const leading = await this.#holdLease();
          this.#storeFailures.succeeded();
          if (!leading) {
            await this.#idle(this.#leaseMs / 3, false);
            continue;
          }
          await this.#runTerm();
        } catch (error) {
          if (error instanceof PoisonEventError || error instanceof InvalidOptionsError) throw error;
          // The store failed (the database restarting, say): try again after a backoff, the lease held or not.
          const failure = this.#storeFailures.storeError(error);
          this.#emit(failure);
          await this.#idle(failure.retryInMs, false);
        }
      }
      // A position passed over ignored events and not yet due is stored now, so a restart does not read them again.
      if (this.#heldLease && this.#stored < this.#position) await this.#commitPosition([]).catch(() => false);
    } catch (error) {
      this.#emit({ type: 'failed', error });
      throw error;
    } finally {
      stopWatching?.();
      await this.#target.releaseLease(name, version, this.owner).catch(() => {});
    }
  }

  /** Applies batches while the lease taken last is sure to be held; then it is renewed. */
  async #runTerm(): Promise<void> {
    const leaseHeldUntil = this.#clock.now() + this.#leaseMs / 3;
    while (!this.#stopped && this.#clock.now() < leaseHeldUntil) {
      if (this.#parking.count > 0 && this.#clock.now() >= this.#parkedCheckAt) {
        this.#parkedCheckAt = this.#clock.now() + this.#pollIntervalMs;
        await this.#parking.retry(
          (event) => this.#applyParked(event),
          () => this.#stopped,
        );
      }
      const outcome = await this.#step();
      this.#storeFailures.succeeded();
      if (outcome === 'superseded') {
        this.#emit({ type: 'lease-lost' });
        return;
      }
      if (outcome === 'idle') {
        await this.#idle(
          Math.min(this.#pollIntervalMs, this.#leaseMs / 3, Math.max(0, this.#positionStoreDueIn())),
          true,
        );
        // Woken by an append: let the appends close behind it land, to read them as one batch.
        if (this.#signalled && this.#appendDelayMs > 0) await this.#idle(this.#appendDelayMs, false);
      }
    }
  }

  /** Takes or renews the lease and reloads the view's position; false while another runner holds it. */
  async #holdLease(): Promise<boolean> {
    const { name, version } = this.#projection;
    const had = this.#heldLease;
    this.#heldLease = await this.#target.acquireLease(
      name,
      version,
      this.owner,
      this.#clock.now(),
      this.#leaseMs,
    );
    if (!this.#heldLease) return false;
    const state = (await this.#target.versions(name)).find((v) => v.version === version);
    if (state === undefined || state.status === 'retired') {
      this.#emit({ type: 'retired' });
      this.#stopped = true;
      return false;
    }
    // Held all along and the stored position is still ours: the position read beyond it (over ignored events, not
    // stored yet) stays; otherwise the runner starts again from what is stored.
    if (!had || state.position !== this.#stored) {
      this.#position = state.position;
      this.#stored = state.position;
      this.#lastEventAt = state.lastEventAt;
      this.#storedAt = this.#clock.now();
    }
    if (!had) this.#emit({ type: 'lease-acquired' });
    return true;
  }

  /**
   * Applies one batch: 'applied', 'idle' (caught up), 'superseded' (the lease or the position moved) or 'failed' (to
   * be read again after the backoff).
   */
  async #step(): Promise<'applied' | 'idle' | 'superseded' | 'failed'> {
    this.#signalled = false;
    const batch = await this.#store.readAll({
      after: this.#position,
      maxCount: this.#position < this.#isolateThrough ? 1 : this.#batchSize,
      following: true,
    });
    if (batch.length === 0) {
      // Caught up: store the position passed over events the view ignores, so a restart does not read them again;
      // at most once per interval, as between batches (the idle wait ends when it is due).
      if (this.#positionStoreDueIn() <= 0 && !(await this.#commitPosition([]))) return 'superseded';
      this.#reachedEnd();
      this.#emit({ type: 'caught-up', position: this.#position });
      // Once this version serves, there is nothing more to activate: no query per idle step.
      if (this.#activate && !this.#serving) await this.#activateIfNeeded();
      return 'idle';
    }
    const last = batch[batch.length - 1] as RecordedEvent;
    const types = this.#types;
    const relevant = await this.#parking.parkBlocked(
      types === undefined ? batch : batch.filter((event) => types.has(event.type)),
    );
    const from = this.#position;
    // A batch with nothing for the view moves the position in memory only, stored at most once per interval: a view
    // interested in a few event types does not pay a transaction for every batch of the others.
    const deferred = relevant.length === 0 && this.#clock.now() - this.#storedAt < POSITION_STORE_INTERVAL_MS;
    if (!deferred) {
      let committed: boolean;
      try {
        committed = await this.#commitPosition(relevant, last);
      } catch (error) {
        const outcome = await this.#applyFailed(relevant, last, error);
        if (outcome !== 'parked') return outcome;
        committed = true;
      }
      if (!committed) return 'superseded';
      this.#attempt = 0;
      this.#previousDelay = 0;
    }
    let gaps = 0;
    let previous = from;
    for (const event of batch) {
      if (previous > 0) gaps += event.globalPosition - previous - 1;
      previous = event.globalPosition;
    }
    this.#position = last.globalPosition;
    this.#lastEventAt = last.recordedAt;
    if (!deferred) this.#markStored();
    this.#emit({
      type: 'batch-applied',
      from,
      to: last.globalPosition,
      events: batch.length,
      gaps,
      lagMs: Math.max(0, this.#clock.now() - last.recordedAt),
    });
    return 'applied';
  }

  /**
   * After an apply threw: waits out the backoff ('failed', to read the batch again), or after the last attempt
   * applies the batch one event at a time from then on, or parks the one event (its position stored past it) or
   * throws PoisonEventError (onPoison 'stop').
   */
  async #applyFailed(
    relevant: readonly RecordedEvent[],
    last: RecordedEvent,
    error: unknown,
  ): Promise<'failed' | 'superseded' | 'parked'> {
    // A view set up wrongly (an async apply on SQLite) fails for every event alike: nothing to park.
    if (error instanceof InvalidOptionsError) throw error;
    const first = relevant[0] as RecordedEvent;
    this.#attempt++;
    this.#emit({ type: 'apply-failed', position: first.globalPosition, error, attempt: this.#attempt });
    if (this.#attempt < this.#maxAttempts) {
      this.#previousDelay = this.#backoff.delay(this.#attempt, this.#previousDelay);
      await this.#idle(this.#previousDelay, false);
      return 'failed';
    }
    const attempts = this.#attempt;
    this.#attempt = 0;
    this.#previousDelay = 0;
    if (relevant.length > 1) {
      this.#isolateThrough = last.globalPosition;
      return 'failed';
    }
    if (this.#onPoison === 'stop')
      throw new PoisonEventError(this.#parking.subscription, first.globalPosition, attempts, error);
    await this.#parking.parkFailed(first, error, attempts);
    return (await this.#commitPosition([], last)) ? 'parked' : 'superseded';
  }

  /** Applies a parked event again, the stored position staying where it is (beyond the event). */
  async #applyParked(event: RecordedEvent): Promise<void> {
    if (!(await this.#commitPosition([event]))) throw new Error('the view was taken over by another runner');
  }

  /**
   * Commits `relevant` (applied by the projection) and moves the stored position to `last` (default: the position
   * read so far) in one transaction; false when another runner took the view over.
   */
  async #commitPosition(relevant: readonly RecordedEvent[], last?: RecordedEvent): Promise<boolean> {
    const { name, version } = this.#projection;
    const { apply, applyBatch } = this.#projection;
    const write =
      applyBatch !== undefined
        ? (tx: Tx) =>
            relevant.length === 0 ? undefined : applyBatch.call(this.#projection, tx, relevant, version)
        : (tx: Tx) =>
            applyAll(tx, relevant, 0, (t, event) =>
              (apply as NonNullable<typeof apply>).call(this.#projection, t, event, version),
            );
    const position = last?.globalPosition ?? this.#position;
    const lastEventAt = last?.recordedAt ?? this.#lastEventAt;
    const committed = await this.#target.commit(
      name,
      version,
      this.owner,
      this.#stored,
      position,
      lastEventAt,
      write,
    );
    if (!committed) {
      this.#heldLease = false;
      return false;
    }
    if (last === undefined) this.#markStored();
    return true;
  }

  /** Milliseconds until the position passed over ignored events is due to be stored; Infinity when it is. */
  #positionStoreDueIn(): number {
    if (this.#stored >= this.#position) return Number.POSITIVE_INFINITY;
    return this.#storedAt + POSITION_STORE_INTERVAL_MS - this.#clock.now();
  }

  #markStored(): void {
    this.#stored = this.#position;
    this.#storedAt = this.#clock.now();
  }

  async #activateIfNeeded(): Promise<void> {
    const { name, version } = this.#projection;
    const status = (await this.#target.versions(name)).find((v) => v.version === version)?.status;
    if (status === 'building') {
      await this.#target.activate(name, version);
      this.#emit({ type: 'activated', position: this.#position });
    }
    // Retired versions stop at their next lease renewal (#holdLease), which reads the status anyway.
    this.#serving = status === 'building' || status === 'active';
  }

  #lookAtParkedNow(): void {
    this.#parkedCheckAt = 0;
    // A caught-up runner is woken as by an append, to look at once.
    this.#signalled = true;
    this.#wake?.();
  }

  /** Waits `ms`, or for an append (when `wakeOnAppend`), or for stop(). */
  #idle(ms: number, wakeOnAppend: boolean): Promise<void> {
    if (this.#stopped || ms <= 0 || (wakeOnAppend && this.#signalled)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#wake = undefined;
        resolve();
      };
      // Not unref'd: a running runner is work in progress and keeps the process alive until stop().
      this.#timer = this.#clock.setTimeout(done, ms);
      this.#wake = () => {
        if (wakeOnAppend || this.#stopped) done();
      };
    });
  }

  #emit(event: ProjectionRunnerEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'projection',
      name: `${this.#projection.name}@${this.#projection.version}`,
      at: this.#clock.now(),
      ...event,
    } as ProjectionRunnerEvent);
  }
}

/** Removes a retired version of a view: its teardown (drop its tables) and its registration. */
export async function removeViewVersion<Tx>(
  target: ProjectionTarget<Tx>,
  projection: Projection<Tx>,
  version: number,
): Promise<void> {
  const state = (await target.versions(projection.name)).find((v) => v.version === version);
  if (state?.status === 'active')
    throw new InvalidOptionsError('version', 'the active version cannot be removed');
  await target.remove(projection.name, version, (tx) => projection.teardown?.(tx, version));
}
