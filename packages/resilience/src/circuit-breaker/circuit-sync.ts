import {
  assertDuration,
  assertFunction,
  assertInteger,
  assertObject,
  assertOneOf,
  assertRatio,
  type Clock,
  InvalidOptionsError,
  randomId,
} from '@stratus/core';
import type { CircuitState, CircuitTransitionReason } from './circuit-breaker.js';
import { QuorumCircuitSync } from './quorum-sync.js';
import { SharedCircuitSync } from './shared-sync.js';
import type { CircuitStateStore, SharedCircuitRecord } from './state-store.js';
import { StoreLink } from './store-link.js';

/** Stands for a failure seen by another instance, which opened the shared circuit (only its text travels). */
export class SharedCircuitFailure extends Error {
  override name = 'SharedCircuitFailure';
  constructor(
    description: string,
    /** The instance that saw it. */
    readonly instanceId: string,
  ) {
    super(`${description} (seen by instance ${instanceId})`);
  }
}

export interface QuorumOptions {
  /** Instances that must report failing for every instance to open (integer >= 1); default 2. */
  minInstances?: number;
  /** Optional: the failing share of live instances that must also be reached, in (0, 1]. */
  ratio?: number;
  /** A report counts this long after the heartbeat that wrote it; default 3 × syncIntervalMs. */
  ttlMs?: number;
}

/**
 * Makes the breaker one of several instances (processes, hosts) that share a circuit through a store.
 *
 * - `shared`: the state itself is shared: when any instance opens the circuit every instance sees it open
 *   (at once with a store that supports subscriptions, else within `syncIntervalMs`), with the same
 *   open-until time and backoff, and half-open trial slots are leased from the store so that no more than
 *   `halfOpen.maxConcurrent` trials run cluster-wide. Failure counting (the trip rule) stays per instance:
 *   an instance opens the circuit for everyone when its own calls trip its rule.
 * - `quorum`: each instance keeps its own state and heartbeats its own verdict (failing while its own calls
 *   hold its breaker open); every instance opens when at least `quorum.minInstances` live instances (and
 *   `quorum.ratio` of them, if set) report failing. Instances that stop heartbeating drop out after `ttlMs`.
 *
 * In mode 'shared', `isolate()` and `reset()` act on every instance (the first release or reset anywhere
 * ends an isolation); in mode 'quorum' they act on this instance only.
 *
 * The store is never called on the path of a call made while closed: it is read and written in the
 * background on the breaker's clock (unref'd timers), every store call is bounded by `storeTimeoutMs`, and
 * an instance that cannot reach the store keeps working on its local state, emitting
 * `shared-state-unavailable` and later `shared-state-restored`.
 */
export interface SharedCircuitOptions {
  store: CircuitStateStore;
  /** Default 'shared'. */
  mode?: 'shared' | 'quorum';
  /** The circuit's key in the store; default: the breaker's `name` (which must then be given). */
  key?: string;
  /** This instance's id in the store; default: a random id. */
  instanceId?: string;
  /** Shared: how often the record is re-read. Quorum: the heartbeat period. Default 1000 ms. */
  syncIntervalMs?: number;
  /** Bound on every store call; default 1000 ms. */
  storeTimeoutMs?: number;
  /** Shared: subscribe to changes when the store can (propagation without waiting for the next read). Default true. */
  subscribe?: boolean;
  /** Shared: a trial slot is freed after this long if its holder never reports back (it died). Default 30 s. */
  trialLeaseMs?: number;
  quorum?: QuorumOptions;
}

/** A state change the breaker made itself (on its own calls' evidence or by hand). */
export interface LocalTransition {
  readonly to: CircuitState;
  readonly reason: CircuitTransitionReason;
  /** Epoch ms at which an open circuit admits trials. */
  readonly openUntil: number;
  readonly openCount: number;
  readonly lastOpenMs: number;
  readonly failure: unknown;
}

export type TrialAdmission =
  | { readonly kind: 'granted'; readonly lease: string }
  /** No slot (or the circuit is open again): reject the call. */
  | { readonly kind: 'denied' }
  /** The circuit was closed meanwhile: run the call normally. */
  | { readonly kind: 'closed' }
  /** The store could not be asked: decide locally. */
  | { readonly kind: 'unavailable' };

export type TrialOutcome =
  | { readonly kind: 'success' }
  | { readonly kind: 'failure'; readonly failure: unknown; readonly retryAfterMs: number }
  | { readonly kind: 'cancelled' };

/** What a sync needs from its breaker. */
export interface CircuitSyncHost {
  readonly name: string;
  readonly clock: Clock;
  /** Takes over a record from the store (`reason` says why it changed). */
  adopt(record: SharedCircuitRecord, reason: CircuitTransitionReason): void;
  /** Opens a closed circuit because a quorum of instances reports failing. */
  openByQuorum(): void;
  /** The open period of the n-th consecutive opening. */
  openDelay(attempt: number, previous: number): number;
  storeAvailabilityChanged(available: boolean, error?: unknown): void;
}

/** The breaker's side of a shared circuit. */
export interface CircuitSync {
  readonly available: boolean;
  transitioned(change: LocalTransition): void;
  /** Shared mode only: cluster-wide half-open trial slots. */
  acquireTrial?(): Promise<TrialAdmission>;
  /** Reports a trial's outcome; false when the store could not take it (the breaker then decides locally). */
  completeTrial?(lease: string, outcome: TrialOutcome): Promise<boolean>;
  /** One round now: read/heartbeat, then write what is pending. Never rejects. */
  sync(): Promise<void>;
  dispose(): Promise<void>;
}

export interface CircuitSyncSettings {
  readonly maxTrials: number;
  readonly successesToClose: number;
  /** The breaker's name was chosen by the user (so it can serve as the default key). */
  readonly named: boolean;
}

export function createCircuitSync(
  options: SharedCircuitOptions,
  host: CircuitSyncHost,
  settings: CircuitSyncSettings,
): CircuitSync {
  assertObject('shared', options as unknown);
  const store = options.store;
  assertObject('shared.store', store as unknown);
  for (const method of ['read', 'compareAndSet', 'report'] as const) {
    assertFunction(`shared.store.${method}`, store[method] as unknown);
  }
  const mode = options.mode ?? 'shared';
  assertOneOf('shared.mode', mode, ['shared', 'quorum'] as const);
  if (options.key === undefined && !settings.named) {
    throw new InvalidOptionsError(
      'shared.key',
      'required when the breaker has no name (unnamed breakers would share one circuit)',
    );
  }
  const key = options.key ?? host.name;
  if (typeof key !== 'string' || key === '')
    throw new InvalidOptionsError('shared.key', 'expected a non-empty string');
  const instanceId = options.instanceId ?? randomId();
  if (typeof instanceId !== 'string' || instanceId === '') {
    throw new InvalidOptionsError('shared.instanceId', 'expected a non-empty string');
  }
  const syncIntervalMs = options.syncIntervalMs ?? 1000;
  assertDuration('shared.syncIntervalMs', syncIntervalMs, { allowZero: false });
  const storeTimeoutMs = options.storeTimeoutMs ?? 1000;
  assertDuration('shared.storeTimeoutMs', storeTimeoutMs, { allowZero: false });
  const link = new StoreLink(host, store, storeTimeoutMs);

  if (mode === 'shared') {
    const trialLeaseMs = options.trialLeaseMs ?? 30_000;
    assertDuration('shared.trialLeaseMs', trialLeaseMs, { allowZero: false });
    return new SharedCircuitSync(host, link, {
      key,
      instanceId,
      syncIntervalMs,
      trialLeaseMs,
      subscribe: options.subscribe ?? true,
      maxTrials: settings.maxTrials,
      successesToClose: settings.successesToClose,
    });
  }
  const quorum = options.quorum ?? {};
  assertObject('shared.quorum', quorum as unknown);
  const minInstances = quorum.minInstances ?? 2;
  assertInteger('shared.quorum.minInstances', minInstances, 1);
  if (quorum.ratio !== undefined) assertRatio('shared.quorum.ratio', quorum.ratio, { exclusiveMin: true });
  const ttlMs = quorum.ttlMs ?? 3 * syncIntervalMs;
  assertDuration('shared.quorum.ttlMs', ttlMs, { allowZero: false });
  return new QuorumCircuitSync(host, link, {
    key,
    instanceId,
    heartbeatMs: syncIntervalMs,
    ttlMs,
    minInstances,
    ratio: quorum.ratio,
  });
}
