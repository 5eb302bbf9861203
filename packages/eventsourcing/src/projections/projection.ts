// What a projection is, how its runner is configured, and what the runner reports.
import type { Backoff, StoreError, StratusEvent } from '@stratus/core';
import type { RecordedEvent } from '../backend.js';
import type { ParkingEventDetail } from '../parking.js';

/** A materialized view: how to create its tables, and how each event changes them. */
export interface Projection<Tx> {
  readonly name: string;
  /** Bump it to rebuild the view from scratch beside the current one (blue/green). */
  readonly version: number;
  /** Event types it reads; others are passed over (the position still moves). Default: all. */
  readonly eventTypes?: readonly string[];
  setup(tx: Tx, version: number): void | Promise<void>;
  /** On SQLite it must be synchronous: it runs inside the commit's transaction. */
  apply?(tx: Tx, event: RecordedEvent, version: number): void | Promise<void>;
  /**
   * Instead of `apply`: the batch's events (those of `eventTypes`; never empty) at once, so a view can write them in
   * a few multi-row statements rather than a round trip per event. Same transaction, same rules.
   */
  applyBatch?(tx: Tx, events: readonly RecordedEvent[], version: number): void | Promise<void>;
  /** Drops the tables of a retired version (ProjectionRunner.remove). */
  teardown?(tx: Tx, version: number): void | Promise<void>;
}

export interface ProjectionRunnerOptions {
  /** Identifies this runner in the lease; default a random id. */
  readonly owner?: string;
  /** Events applied per transaction; default 500. */
  readonly batchSize?: number;
  /** Lease duration: another runner takes over at most this long after this one dies; default 10 s. */
  readonly leaseMs?: number;
  /** Safety poll while caught up (appends wake the runner at once); default 1000 ms. */
  readonly pollIntervalMs?: number;
  /**
   * Once an append wakes a caught-up runner, wait this long before reading, so a burst of appends is applied as one
   * batch (one transaction) rather than one each: fewer commits under load for a little more lag. Default 0.
   */
  readonly appendDelayMs?: number;
  /**
   * Make this version the active one the first time it catches up (retiring the previous one): a new version
   * rebuilds beside the old and takes over when complete. Default true.
   */
  readonly activateWhenCaughtUp?: boolean;
  /** Delays between attempts at a batch whose apply threw; default exponential from 100 ms up to 30 s. */
  readonly retryBackoff?: Backoff;
  /**
   * Attempts at a batch before its events are applied one per transaction, and at one event before it counts as
   * poison; default 10.
   */
  readonly maxAttempts?: number;
  /**
   * 'park' (default): a poison event is parked as a subscription's is (SubscriptionOptions.onPoison), under the
   * name `projection:<name>@<version>`, and the view goes on without it; 'stop': the runner stops with
   * PoisonEventError.
   */
  readonly onPoison?: 'park' | 'stop';
  /** The ordering keys of an event (default its stream): events sharing one wait behind a parked event. */
  readonly keysOf?: (event: RecordedEvent) => string | readonly string[];
}

/** What a projection runner reports, before the fields every event carries. */
export type ProjectionRunnerEventDetail =
  | { readonly type: 'lease-acquired' | 'lease-lost' | 'retired' }
  | { readonly type: 'caught-up' | 'activated'; readonly position: number }
  | {
      readonly type: 'batch-applied';
      readonly from: number;
      readonly to: number;
      readonly events: number;
      /** Positions skipped inside the batch: values of the sequence whose transactions rolled back. */
      readonly gaps: number;
      /**
       * How long after its last event was recorded the batch committed: the view's lag (a `*Ms` field, so the
       * OpenTelemetry adapter records it as a histogram).
       */
      readonly lagMs: number;
    }
  /** The runner stopped on an error: a poison event with `onPoison: 'stop'`, or invalid options. */
  | { readonly type: 'failed'; readonly error: unknown }
  /** The store or the view's database failed (a read, the lease): tried again in `retryInMs`. */
  | StoreError
  | {
      readonly type: 'apply-failed';
      /** The first event of the batch (or the event) that failed. */
      readonly position: number;
      readonly error: unknown;
      readonly attempt: number;
    }
  | ParkingEventDetail;

export type ProjectionRunnerEvent = StratusEvent & {
  readonly component: 'projection';
} & ProjectionRunnerEventDetail;

export interface ProjectionLag {
  /** Events appended that the view has not applied yet. */
  readonly events: number;
  /** How old the oldest unapplied event's predecessor is: now minus when the last applied event was recorded (0 when caught up). */
  readonly ms: number;
  readonly position: number;
}
