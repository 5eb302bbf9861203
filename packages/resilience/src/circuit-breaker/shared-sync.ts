import { randomId } from '@stratus/core';
import type { CircuitTransitionReason } from './circuit-breaker.js';
import type {
  CircuitSync,
  CircuitSyncHost,
  LocalTransition,
  TrialAdmission,
  TrialOutcome,
} from './circuit-sync.js';
import { closedCircuitState, type SharedCircuitRecord, type SharedCircuitState } from './state-store.js';
import type { StoreLink } from './store-link.js';

export interface SharedSyncSettings {
  readonly key: string;
  readonly instanceId: string;
  readonly syncIntervalMs: number;
  readonly trialLeaseMs: number;
  readonly subscribe: boolean;
  readonly maxTrials: number;
  readonly successesToClose: number;
}

/** A write this instance wants to make, decided against whatever the store holds when it is made. */
interface Intent {
  readonly state: SharedCircuitState;
  /** The version this instance had seen when it decided (its local state was based on it). */
  readonly base: number;
  /** Made by hand (isolate, release, reset): applies over anything. */
  readonly force: boolean;
}

/** Write attempts before giving up to contention and taking what the store holds. */
const MAX_ATTEMPTS = 5;
const MAX_FAILURE_TEXT = 500;

/** Reasons for which a local transition is written as it is (the others come from the store itself). */
const PUBLISHED: ReadonlySet<CircuitTransitionReason> = new Set([
  'trip-rule',
  'retry-after',
  'trial-failed',
  'trials-succeeded',
  'isolated',
  'released',
  'reset',
]);

/** Mode 'shared': one circuit state for every instance, kept in the store as a compare-and-set register. */
export class SharedCircuitSync implements CircuitSync {
  readonly #host: CircuitSyncHost;
  readonly #link: StoreLink;
  readonly #settings: SharedSyncSettings;
  /** The newest record seen (undefined: none read yet, or none exists). */
  #record: SharedCircuitRecord | undefined;
  #pending: Intent | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(host: CircuitSyncHost, link: StoreLink, settings: SharedSyncSettings) {
    this.#host = host;
    this.#link = link;
    this.#settings = settings;
    link.every(settings.syncIntervalMs, () => this.sync());
    void this.sync();
  }

  get available(): boolean {
    return this.#link.available;
  }

  transitioned(change: LocalTransition): void {
    if (this.#link.stopped || !PUBLISHED.has(change.reason)) return;
    const force = change.reason === 'isolated' || change.reason === 'released' || change.reason === 'reset';
    this.#pending = { state: this.#stateOf(change), base: this.#record?.version ?? 0, force };
    this.#link.serial(() => this.#flush()).catch(() => {});
  }

  async acquireTrial(): Promise<TrialAdmission> {
    if (!this.#link.available) return { kind: 'unavailable' };
    const lease = randomId();
    const { maxTrials, trialLeaseMs } = this.#settings;
    try {
      return await this.#link.serial(() =>
        this.#mutate<TrialAdmission>((current, now) => {
          if (current === undefined || current.state === 'closed') return { result: { kind: 'closed' } };
          const record = current;
          if (record.state === 'isolated' || (record.state === 'open' && record.openUntil > now)) {
            return { result: { kind: 'denied' } };
          }
          const halfOpen = record.state === 'half-open';
          const trials = halfOpen ? liveTrials(record.trials, now) : {};
          if (Object.keys(trials).length >= maxTrials) return { result: { kind: 'denied' } };
          trials[lease] = now + trialLeaseMs;
          const state: SharedCircuitState = halfOpen
            ? { ...unversioned(record), trials }
            : this.#stamp(
                { ...unversioned(record), state: 'half-open', trials, successes: 0 },
                'open-elapsed',
                now,
              );
          return { state, result: { kind: 'granted', lease } };
        }),
      );
    } catch {
      return { kind: 'unavailable' };
    }
  }

  async completeTrial(lease: string, outcome: TrialOutcome): Promise<boolean> {
    try {
      await this.#link.serial(() =>
        this.#mutate((current, now) => {
          // Someone else decided meanwhile (another trial failed, the lease expired, a reset): nothing to add.
          if (current?.state !== 'half-open' || !(lease in current.trials)) return { result: undefined };
          const { [lease]: _, ...trials } = current.trials;
          if (outcome.kind === 'cancelled')
            return { state: { ...unversioned(current), trials }, result: undefined };
          if (outcome.kind === 'success') {
            const successes = current.successes + 1;
            const state: SharedCircuitState =
              successes >= this.#settings.successesToClose
                ? this.#stamp({ ...closedCircuitState }, 'trials-succeeded', now)
                : { ...unversioned(current), trials, successes };
            return { state, result: undefined };
          }
          const openCount = current.openCount + 1;
          const delay = this.#host.openDelay(openCount, current.lastOpenMs);
          const state = this.#stamp(
            {
              ...closedCircuitState,
              state: 'open',
              openUntil: now + Math.max(delay, outcome.retryAfterMs),
              openCount,
              lastOpenMs: delay,
              lastFailure: describeFailure(outcome.failure),
            },
            'trial-failed',
            now,
          );
          return { state, result: undefined };
        }),
      );
      return true;
    } catch {
      return false;
    }
  }

  async sync(): Promise<void> {
    if (this.#link.stopped) return;
    await this.#link
      .serial(async () => {
        this.#receive(await this.#link.call((store) => store.read(this.#settings.key)));
        await this.#flush();
        await this.#ensureSubscribed();
      })
      .catch(() => {});
  }

  async dispose(): Promise<void> {
    this.#link.stop();
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    await unsubscribe?.().catch(() => {});
  }

  /** Takes a record from a read or a subscription, if it is news. */
  #receive(record: SharedCircuitRecord | undefined): void {
    if (record === undefined || !this.#isNews(record)) return;
    this.#record = record;
    // A pending write of ours is decided against this record when it is flushed; adopting now would flip
    // the local state back and forth.
    if (this.#pending === undefined) this.#host.adopt(record, 'shared');
  }

  #isNews(record: SharedCircuitRecord): boolean {
    return this.#record === undefined || record.version > this.#record.version;
  }

  /** Writes the pending intent if it still makes sense against the store's current record. */
  async #flush(): Promise<void> {
    const intent = this.#pending;
    if (intent === undefined) return;
    await this.#mutate((current) => {
      if (this.#pending === intent) this.#pending = undefined;
      return { state: supersedes(intent, current) ? intent.state : undefined, result: undefined };
    }).catch((error: unknown) => {
      // Unreachable store: keep the intent (unless a newer one replaced it) for the next round.
      this.#pending ??= intent;
      throw error;
    });
  }

  /**
   * Compare-and-set loop: `decide` sees the current record and returns the state to write (or none); on a
   * lost race it decides again against the record that won. Whatever ends up stored is adopted locally.
   */
  async #mutate<R>(
    decide: (
      current: SharedCircuitRecord | undefined,
      now: number,
    ) => { state?: SharedCircuitState; result: R },
  ): Promise<R> {
    const { key } = this.#settings;
    let current = this.#record;
    for (let attempt = 1; ; attempt++) {
      const { state, result } = decide(current, this.#host.clock.now());
      if (state === undefined) {
        if (current !== undefined) this.#host.adopt(current, 'shared');
        return result;
      }
      const written = await this.#link.call((store) =>
        store.compareAndSet(key, current?.version ?? 0, state),
      );
      if (written.written && written.record) {
        // A subscription may already have brought a newer record than our own write.
        if (this.#isNews(written.record)) {
          this.#record = written.record;
          this.#host.adopt(written.record, state.reason as CircuitTransitionReason);
        }
        return result;
      }
      if (written.record && this.#isNews(written.record)) this.#record = written.record;
      current = this.#record;
      if (attempt >= MAX_ATTEMPTS) {
        if (current) this.#host.adopt(current, 'shared');
        throw new Error(`circuit "${key}": gave up writing after ${MAX_ATTEMPTS} lost races`);
      }
    }
  }

  async #ensureSubscribed(): Promise<void> {
    const { store } = this.#link;
    if (!this.#settings.subscribe || this.#unsubscribe !== undefined || store.subscribe === undefined) return;
    const subscribe = store.subscribe.bind(store);
    const unsubscribe = await this.#link.call(() =>
      subscribe(this.#settings.key, (record) => {
        // Our own writes are adopted where they are made, with their own reason.
        if (record.updatedBy !== this.#settings.instanceId) this.#receive(record);
      }),
    );
    if (this.#link.stopped) await unsubscribe();
    else this.#unsubscribe = unsubscribe;
  }

  #stateOf(change: LocalTransition): SharedCircuitState {
    const now = this.#host.clock.now();
    switch (change.to) {
      case 'open':
        return this.#stamp(
          {
            ...closedCircuitState,
            state: 'open',
            openUntil: change.openUntil,
            openCount: change.openCount,
            lastOpenMs: change.lastOpenMs,
            lastFailure: describeFailure(change.failure),
          },
          change.reason,
          now,
        );
      case 'isolated':
        return this.#stamp({ ...closedCircuitState, state: 'isolated' }, change.reason, now);
      default:
        return this.#stamp({ ...closedCircuitState }, change.reason, now);
    }
  }

  #stamp(state: Unstamped, reason: string, now: number): SharedCircuitState {
    return { ...state, reason, updatedAt: now, updatedBy: this.#settings.instanceId };
  }
}

type Unstamped = Omit<SharedCircuitState, 'reason' | 'updatedAt' | 'updatedBy'>;

/** A record's state without its version (which the store assigns), for writing back modified. */
function unversioned(record: SharedCircuitRecord): SharedCircuitState {
  const { version: _, ...state } = record;
  return state;
}

/** Does a local decision still apply over what the store now holds? */
function supersedes(intent: Intent, current: SharedCircuitRecord | undefined): boolean {
  const target = intent.state.state;
  const stored = current?.state ?? 'closed';
  if (intent.force) return stored !== target || target === 'isolated';
  // Failures are evidence: they may open a closed circuit whatever happened since we last looked.
  if (target === 'open' && stored === 'closed') return true;
  // Otherwise only if nobody changed the circuit since our local state was based on it.
  return stored !== target && (current?.version ?? 0) === intent.base;
}

function liveTrials(trials: Readonly<Record<string, number>>, now: number): Record<string, number> {
  const live: Record<string, number> = {};
  for (const [id, expires] of Object.entries(trials)) if (expires > now) live[id] = expires;
  return live;
}

function describeFailure(failure: unknown): string | undefined {
  if (failure === undefined) return undefined;
  const text = failure instanceof Error ? `${failure.name}: ${failure.message}` : safeJson(failure);
  return text.length > MAX_FAILURE_TEXT ? `${text.slice(0, MAX_FAILURE_TEXT)}…` : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
