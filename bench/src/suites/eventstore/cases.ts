/**
 * The cases of the eventstore suite, the same measurement code for every implementation (store.ts), with their
 * counts for a full and a quick run and the targets. Each measurement uses streams not used before; the
 * cases that read every event (catch-up, lag) get an empty database of their own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CaseSummary } from '../../stats.js';
import type { MeasureContext, Scale } from '../messaging/cases.js';
import { type Measurement, within } from '../messaging/measure.js';
import type { RunnableCase } from '../messaging/runner.js';
import { describeError } from '../self-timed.js';
import {
  type BackendKind,
  benchEvent,
  benchEvents,
  type EventStoreImplementation,
  ORDER_CATEGORY,
  type OrderState,
  type StoreUnderTest,
} from './store.js';

/** One implementation as the cases see it: its store for the run, or an empty one for a measurement. */
export interface Contestant {
  readonly impl: string;
  readonly implementation: EventStoreImplementation;
  /** The implementation's store for the whole run (one database or file), opened on first use. */
  shared(): Promise<StoreUnderTest>;
  /** A store on an empty database or file of its own; `release` closes it and removes the data. */
  fresh(name: string): Promise<{ readonly store: StoreUnderTest; release(): Promise<void> }>;
  /** Records something a measurement observed, printed under the table (e.g. the append rate reached). */
  note(caseName: string, text: string): void;
}

export type Context = MeasureContext<Contestant, undefined>;

/** A figure the issue asks for, checked against a Stratus row. */
export interface Target {
  readonly text: string;
  met(summary: CaseSummary): boolean;
}

export interface EventStoreCase extends RunnableCase<Contestant, undefined> {
  readonly description: string;
  /** Only implementations on these backends (default both). */
  readonly backends?: readonly BackendKind[];
  /** Only the Stratus implementations (Emmett has no such feature): no ratios. */
  readonly stratusOnly?: boolean;
  /** The run's scale adjusted for this case (catch-up reads more events per measurement). */
  readonly scale?: (base: Scale) => Scale;
  readonly targets?: Partial<Record<BackendKind, Target>>;
}

export const fullScale: Scale = {
  jobs: 20_000,
  latencySamples: 3000,
  lockMs: 0,
  rounds: 3,
  redeliveryRounds: 1,
  targetMs: 3000,
  capMs: 10_000,
  latencyCapMs: 10_000,
  warmupJobs: 2000,
  warmupCapMs: 2000,
};

export const quickScale: Scale = {
  jobs: 1000,
  latencySamples: 300,
  lockMs: 0,
  rounds: 1,
  redeliveryRounds: 1,
  targetMs: 1000,
  capMs: 3000,
  latencyCapMs: 3000,
  warmupJobs: 100,
  warmupCapMs: 1000,
};

export const BATCH = 100;
export const SHORT_STREAM = 10;
/** Streams the read case cycles through. */
export const READ_STREAMS = 100;
export const LONG_STREAM = 2000;
/** The snapshot case's snapshot is this many events behind the stream's end (as with a snapshot every 100). */
export const AFTER_SNAPSHOT = 10;
export const WRITERS = [8, 32] as const;
/** Catch-up reads this many times the suite's job count per measurement (it is over quickly otherwise). */
export const CATCH_UP_FACTOR = 5;
export const LAG_RATE = 1000;
/** Appends in flight at once at most in the lag case (the writer does not wait for one before the next). */
export const LAG_IN_FLIGHT = 64;
/** How long the lag case waits, after its last append, for the view to have every event. */
export const LAG_SETTLE_MS = 5000;

const stream = (context: Context, suffix: string | number) => `${ORDER_CATEGORY}-${context.name}-${suffix}`;

/**
 * Calls that fail now and then (Emmett on SQLite: SQLITE_BUSY) are not counted; up to 1 % of them are noted under
 * the table, more fail the row (as does any failure of the other steps).
 */
class Failures {
  #count = 0;
  #first = '';
  readonly #caseName: string;
  readonly #context: Context;

  constructor(context: Context, caseName: string) {
    this.#context = context;
    this.#caseName = caseName;
  }

  /** Runs `call`, resolving true when it succeeded. */
  async attempt(call: () => Promise<unknown>): Promise<boolean> {
    try {
      await call();
      return true;
    } catch (error) {
      this.#count++;
      this.#first ||= describeError(error);
      return false;
    }
  }

  /** More than 1 % of the calls so far failed (at least 2): the caller stops, and `settle` fails the row. */
  tooMany(succeeded: number): boolean {
    return this.#count > Math.max(1, (succeeded + this.#count) / 100);
  }

  settle(succeeded: number): void {
    if (this.#count === 0) return;
    const text = `${this.#count} of ${succeeded + this.#count} calls failed (${this.#first})`;
    if (this.tooMany(succeeded)) throw new Error(text);
    this.#context.driver.note(this.#caseName, `${text}; not counted`);
  }
}

/** `count` sequential `await op(i)`, each timed, until `count` or the cap; `op` resolves with events written. */
async function sequential(
  context: Context,
  caseName: string,
  count: number,
  capMs: number,
  op: (i: number) => Promise<number>,
): Promise<Measurement> {
  const failures = new Failures(context, caseName);
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let done = 0;
  for (let i = 0; done < count && performance.now() < deadline && !failures.tooMany(latencies.length); i++) {
    const before = performance.now();
    let written = 0;
    if (!(await failures.attempt(async () => (written = await op(i))))) continue;
    latencies.push(performance.now() - before);
    done += written;
  }
  failures.settle(latencies.length);
  return { jobs: done, ms: performance.now() - start, latencies, capped: done < count };
}

/** `writers` callers at once, each appending one event at a time to its own stream (`count` events in all). */
async function concurrentWriters(
  context: Context,
  caseName: string,
  count: number,
  capMs: number,
  writers: number,
): Promise<Measurement> {
  const store = await context.driver.shared();
  const failures = new Failures(context, caseName);
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let next = 0;
  const writer = async (w: number) => {
    const name = stream(context, `w${w}`);
    const append = appender(store, name);
    while (next < count && performance.now() < deadline && !failures.tooMany(latencies.length)) {
      const i = next++;
      const before = performance.now();
      if (!(await failures.attempt(() => append(i)))) continue;
      latencies.push(performance.now() - before);
    }
  };
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  failures.settle(latencies.length);
  return {
    jobs: latencies.length,
    ms: performance.now() - start,
    latencies,
    capped: latencies.length < count,
  };
}

/**
 * Appends single events to one stream, each expecting the version the previous one reached. After a failed
 * append (which may have committed or not) the version is unknown, and later appends expect none.
 */
function appender(store: StoreUnderTest, name: string): (i: number) => Promise<number> {
  let expected: number | undefined = 0;
  return async (i) => {
    const at = expected;
    expected = undefined;
    await store.append(name, [benchEvent(i)], at);
    expected = at === undefined ? undefined : at + 1;
    return 1;
  };
}

/** Appends `events` events to `name` in batches of BATCH, one call at a time (untimed set-up). */
async function fill(store: StoreUnderTest, name: string, events: number): Promise<void> {
  for (let version = 0; version < events; version += BATCH) {
    await store.append(name, benchEvents(Math.min(BATCH, events - version), version), version);
  }
}

function checkRebuilt(state: OrderState, expected: number): number {
  if (state.items !== expected) throw new Error(`rebuilt ${state.items} events, expected ${expected}`);
  return 1;
}

async function catchUp(context: Context, count: number, capMs: number): Promise<Measurement> {
  const { store, release } = await context.driver.fresh(context.name);
  try {
    for (let written = 0; written < count; written += BATCH) {
      await store.append(stream(context, written), benchEvents(Math.min(BATCH, count - written)), 0);
    }
    let seen = 0;
    let allSeen!: () => void;
    const done = new Promise<void>((resolve) => {
      allSeen = resolve;
    });
    const start = performance.now();
    const following = await store.follow('catch-up', () => {
      if (++seen === count) allSeen();
    });
    await within(done, start + capMs - performance.now(), undefined);
    const ms = performance.now() - start;
    await following.stop();
    return { jobs: Math.min(seen, count), ms, latencies: [], capped: seen < count };
  } finally {
    await release();
  }
}

/**
 * Projection lag: a view follows live while one writer appends single events at LAG_RATE (open loop: it does not
 * wait for an append before starting the next, up to LAG_IN_FLIGHT at once), each to one of 100 streams. An
 * event's lag is from its append returning to the view having it (floored at 0: a view can get an event before
 * its writer hears back). Fails if any appended event never reaches the view.
 */
async function projectionLag(
  caseName: string,
  context: Context,
  count: number,
  capMs: number,
): Promise<Measurement> {
  const { store, release } = await context.driver.fresh(context.name);
  try {
    const seenAt = new Map<number, number>();
    const appendedAt = new Map<number, number>();
    const following = await store.follow('live', (position) => {
      if (!seenAt.has(position)) seenAt.set(position, performance.now());
    });
    try {
      await sleep(200); // a polling consumer's first poll
      const interval = 1000 / LAG_RATE;
      const inFlight = new Set<Promise<void>>();
      let failure: unknown;
      const start = performance.now();
      const deadline = start + capMs;
      let sent = 0;
      for (; sent < count && failure === undefined && performance.now() < deadline; sent++) {
        const wait = start + sent * interval - performance.now();
        if (wait >= 1) await sleep(wait);
        while (inFlight.size >= LAG_IN_FLIGHT) await Promise.race(inFlight);
        const appended: Promise<void> = store
          .append(stream(context, sent % 100), [benchEvent(sent)], undefined)
          .then(
            (position) => {
              appendedAt.set(position, performance.now());
              inFlight.delete(appended);
            },
            (error: unknown) => {
              failure ??= error;
              inFlight.delete(appended);
            },
          );
        inFlight.add(appended);
      }
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure;
      const appendMs = performance.now() - start;
      context.driver.note(caseName, `appended ${sent} events at ${Math.round((sent / appendMs) * 1000)}/s`);
      const settleUntil = performance.now() + LAG_SETTLE_MS;
      const missing = () => [...appendedAt.keys()].filter((position) => !seenAt.has(position));
      while (missing().length > 0 && performance.now() < settleUntil) await sleep(10);
      const skipped = missing();
      if (skipped.length > 0) {
        throw new Error(
          `${skipped.length} of ${appendedAt.size} appended events never reached the view within ` +
            `${LAG_SETTLE_MS} ms (first missing position ${Math.min(...skipped)})`,
        );
      }
      const latencies = [...appendedAt].map(([position, at]) =>
        Math.max(0, (seenAt.get(position) ?? at) - at),
      );
      return {
        jobs: latencies.length,
        ms: performance.now() - start,
        latencies,
        capped: latencies.length < count,
      };
    } finally {
      await following.stop();
    }
  } finally {
    await release();
  }
}

const kPerSec = (rate: number) => (summary: CaseSummary) => summary.opsPerSec >= rate;

export const eventStoreCases: EventStoreCase[] = [
  {
    name: 'append-new-stream',
    description: 'one event appended to a new stream (expected version: no stream), one append at a time',
    kind: 'throughput',
    step: 10,
    targets: {
      postgres: { text: 'PostgreSQL sequential appends >= 3 k/s', met: kPerSec(3000) },
      sqlite: { text: 'SQLite sequential appends >= 15 k/s', met: kPerSec(15_000) },
    },
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      return sequential(context, 'append-new-stream', count, capMs, async (i) => {
        await store.append(stream(context, i), [benchEvent(i)], 0);
        return 1;
      });
    },
  },
  {
    name: 'append-same-stream',
    description: 'one event appended to the same stream (expected version: the previous one), one at a time',
    kind: 'throughput',
    step: 10,
    targets: {
      postgres: { text: 'PostgreSQL sequential appends >= 3 k/s', met: kPerSec(3000) },
      sqlite: { text: 'SQLite sequential appends >= 15 k/s', met: kPerSec(15_000) },
    },
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      return sequential(context, 'append-same-stream', count, capMs, appender(store, stream(context, 'one')));
    },
  },
  ...WRITERS.map(
    (writers): EventStoreCase => ({
      name: `append-c${writers}`,
      description: `${writers} concurrent writers, each appending one event at a time to its own stream (expected version)`,
      kind: 'throughput',
      step: writers,
      targets:
        writers === 32
          ? { postgres: { text: 'PostgreSQL with 32 writers >= 8 k/s', met: kPerSec(8000) } }
          : undefined,
      measure: (context, count, capMs) =>
        concurrentWriters(context, `append-c${writers}`, count, capMs, writers),
    }),
  ),
  {
    name: `append-batch-${BATCH}`,
    description: `${BATCH} events in one append, to a new stream each, one append at a time (ops/s: events/s; p50/p99: per append)`,
    kind: 'throughput',
    step: BATCH,
    targets: {
      postgres: { text: 'PostgreSQL batched >= 50 k events/s', met: kPerSec(50_000) },
      sqlite: { text: 'SQLite batched >= 100 k events/s', met: kPerSec(100_000) },
    },
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      const batch = benchEvents(BATCH);
      return sequential(context, `append-batch-${BATCH}`, count, capMs, async (i) => {
        await store.append(stream(context, i), batch, 0);
        return BATCH;
      });
    },
  },
  {
    name: `read-stream-${SHORT_STREAM}`,
    description: `a whole ${SHORT_STREAM}-event stream read, one read at a time, over ${READ_STREAMS} such streams (ops/s: reads/s)`,
    kind: 'throughput',
    step: 10,
    targets: { postgres: { text: 'PostgreSQL short-stream reads >= 8 k/s', met: kPerSec(8000) } },
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      const streams = Math.min(READ_STREAMS, count);
      for (let s = 0; s < streams; s++) await store.append(stream(context, s), benchEvents(SHORT_STREAM), 0);
      return sequential(context, `read-stream-${SHORT_STREAM}`, count, capMs, async (i) => {
        const read = await store.readStream(stream(context, i % streams));
        if (read !== SHORT_STREAM) throw new Error(`read ${read} events, expected ${SHORT_STREAM}`);
        return 1;
      });
    },
  },
  {
    name: `rebuild-${LONG_STREAM}`,
    description: `an aggregate rebuilt from its ${LONG_STREAM}-event stream, no snapshot (Stratus and Emmett aggregateStream)`,
    kind: 'throughput',
    step: 1,
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      const name = stream(context, 'long');
      await fill(store, name, LONG_STREAM);
      return sequential(context, `rebuild-${LONG_STREAM}`, count, capMs, async () =>
        checkRebuilt(await store.rebuild(name), LONG_STREAM),
      );
    },
  },
  {
    name: `rebuild-${LONG_STREAM}-snapshot`,
    description:
      `Stratus only (Emmett has no snapshots): the same aggregate through AggregateRepository.load from a ` +
      `snapshot taken ${AFTER_SNAPSHOT} events before the end`,
    kind: 'throughput',
    step: 1,
    stratusOnly: true,
    async measure(context, count, capMs) {
      const store = await context.driver.shared();
      const snapshots = store.snapshots;
      if (snapshots === undefined) throw new Error(`${context.driver.impl} has no snapshots`);
      const name = stream(context, 'long');
      await fill(store, name, LONG_STREAM - AFTER_SNAPSHOT);
      await snapshots.take(name);
      await store.append(name, benchEvents(AFTER_SNAPSHOT), LONG_STREAM - AFTER_SNAPSHOT);
      return sequential(context, `rebuild-${LONG_STREAM}-snapshot`, count, capMs, async () =>
        checkRebuilt(await snapshots.rebuild(name), LONG_STREAM),
      );
    },
  },
  {
    name: 'catch-up',
    description:
      'every event read from position 0 through a subscription (Stratus subscribe, checkpointed per batch; ' +
      'Emmett consumer + processor, checkpointed per event), timed from its start to the last event handled ' +
      '(ops/s: events/s; p50/p99: time per event)',
    kind: 'throughput',
    step: BATCH,
    scale: (base) => ({
      ...base,
      jobs: base.jobs * CATCH_UP_FACTOR,
      warmupJobs: base.warmupJobs * CATCH_UP_FACTOR,
    }),
    targets: {
      postgres: { text: 'catch-up >= 100 k events/s', met: kPerSec(100_000) },
      sqlite: { text: 'catch-up >= 100 k events/s', met: kPerSec(100_000) },
    },
    measure: catchUp,
  },
  {
    name: 'projection-lag-1k',
    description:
      `lag from append to view while appending ${LAG_RATE} events/s (Stratus ProjectionRunner into its ` +
      'PostgreSQL or SQLite projection target, one view row per event; Emmett consumer + reactor/processor, ' +
      'which writes nothing); fails if any event is skipped (ops/s: 1000 ÷ mean lag)',
    kind: 'latency',
    step: 1,
    targets: {
      postgres: { text: 'projection lag p99 < 50 ms, no event skipped', met: (s) => s.p99Ms < 50 },
      sqlite: { text: 'projection lag p99 < 50 ms, no event skipped', met: (s) => s.p99Ms < 50 },
    },
    measure: (context, count, capMs) => projectionLag('projection-lag-1k', context, count, capMs),
  },
];
