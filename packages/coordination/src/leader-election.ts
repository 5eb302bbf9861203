import { hostname } from 'node:os';
import {
  assertDuration,
  assertFunction,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  randomId,
  type StratusEvent,
  systemClock,
  type TimerHandle,
  type Unsubscribe,
} from '@stratus/core';
import { checkLeaseTiming, LeaseKeeper } from './lease-keeper.js';
import type { LeaseGrant, LeaseHolder, LeaseStore } from './lease-store.js';

export interface LeaderElectionOptions {
  readonly store: LeaseStore;
  /** The leadership contested (the lease's name). */
  readonly name: string;
  /** This candidate's id; default `<host>-<pid>-<random>`. */
  readonly candidateId?: string;
  /** How long a term lasts without renewal: a dead leader is replaced within this; default 10 s. */
  readonly leaseMs?: number;
  /** How often the leader renews (well before the lease runs out); default leaseMs / 3. */
  readonly renewEveryMs?: number;
  /** How often a follower tries to take over; default renewEveryMs. */
  readonly retryEveryMs?: number;
  /**
   * The leader steps down this long before its lease would expire by its own clock, if no renewal succeeded by
   * then, so it stops before anyone else can start; default leaseMs / 10 (at most 1 s).
   */
  readonly safetyMarginMs?: number;
  readonly clock?: Clock;
}

/** One term of leadership: its fencing token, and a signal that aborts the moment the term ends. */
export interface LeadershipTerm {
  readonly token: number;
  readonly signal: AbortSignal;
  /** When it began (the clock's epoch ms). */
  readonly since: number;
}

export type LeadershipLossReason = 'renewal-refused' | 'expired' | 'stopped';

type ElectionEventDetail =
  | { readonly type: 'elected'; readonly token: number }
  | {
      readonly type: 'lost';
      readonly token: number;
      readonly reason: LeadershipLossReason;
      readonly heldMs: number;
    }
  | { readonly type: 'store-error'; readonly error: unknown; readonly leading: boolean }
  | { readonly type: 'work-failed'; readonly token: number; readonly error: unknown };

export type LeaderElectionEvent = StratusEvent & {
  readonly component: 'leader-election';
  readonly candidateId: string;
} & ElectionEventDetail;

export type LeaderWork = (term: LeadershipTerm) => void | Promise<void>;

/**
 * Leader Election over a lease: candidates try to take the lease; the holder renews it every `renewEveryMs` and
 * leads while it does. Each term carries the lease's fencing token and an AbortSignal that fires as soon as the term
 * ends: a renewal refused (someone else holds it), no successful renewal by the local deadline (store unreachable,
 * process paused), or stop(). Work registered with `onElected` runs at each term with that signal.
 */
export class LeaderElection {
  readonly name: string;
  readonly candidateId: string;
  readonly events = new EventEmitter<LeaderElectionEvent>();
  readonly #store: LeaseStore;
  readonly #clock: Clock;
  readonly #leaseMs: number;
  readonly #renewEveryMs: number;
  readonly #retryEveryMs: number;
  readonly #marginMs: number;
  readonly #works = new Set<LeaderWork>();
  readonly #running = new Set<Promise<void>>();
  #term: (LeadershipTerm & { readonly keeper: LeaseKeeper }) | undefined;
  #started = false;
  #stopped = false;
  #tick: TimerHandle | undefined;
  #campaigning: Promise<void> | undefined;
  #electedWaiters: ((term: LeadershipTerm) => void)[] = [];

  constructor(options: LeaderElectionOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidOptionsError('options', 'expected an object');
    }
    const { store, name, clock = systemClock, leaseMs = 10_000 } = options;
    if (typeof store?.acquire !== 'function' || typeof store.renew !== 'function') {
      throw new InvalidOptionsError('store', 'expected a LeaseStore');
    }
    if (typeof name !== 'string' || name.length === 0 || name.length > 200) {
      throw new InvalidOptionsError('name', 'expected a string of 1 to 200 characters');
    }
    const candidateId = options.candidateId ?? `${hostname()}-${process.pid}-${randomId(4)}`;
    if (typeof candidateId !== 'string' || candidateId.length === 0 || candidateId.length > 200) {
      throw new InvalidOptionsError('candidateId', 'expected a string of 1 to 200 characters');
    }
    const timing = checkLeaseTiming(leaseMs, options.renewEveryMs, options.safetyMarginMs);
    const retryEveryMs = options.retryEveryMs ?? timing.renewEveryMs;
    assertDuration('retryEveryMs', retryEveryMs, { allowZero: false });
    this.#store = store;
    this.name = name;
    this.candidateId = candidateId;
    this.#clock = clock;
    this.#leaseMs = leaseMs;
    this.#renewEveryMs = timing.renewEveryMs;
    this.#retryEveryMs = retryEveryMs;
    this.#marginMs = timing.safetyMarginMs;
  }

  get isLeader(): boolean {
    return this.#term !== undefined;
  }

  /** The current term while this candidate leads. */
  get term(): LeadershipTerm | undefined {
    return this.#term;
  }

  /** Who leads now, as the store says (any candidate can ask, started or not). */
  async leader(): Promise<LeaseHolder | undefined> {
    return (await this.#store.holders(this.name, this.#clock.now()))[0];
  }

  /** Runs `work` at the start of every term of this candidate (and now, if it leads); errors become events. */
  onElected(work: LeaderWork): Unsubscribe {
    assertFunction('work', work);
    this.#works.add(work);
    if (this.#term !== undefined) this.#runWork(work, this.#term);
    return () => {
      this.#works.delete(work);
    };
  }

  /** Resolves with the next term this candidate wins (at once if it leads). */
  waitForLeadership(): Promise<LeadershipTerm> {
    if (this.#term !== undefined) return Promise.resolve(this.#term);
    return new Promise((resolve) => this.#electedWaiters.push(resolve));
  }

  /** Starts campaigning. */
  start(): this {
    if (this.#started) return this;
    this.#started = true;
    this.#schedule(0);
    return this;
  }

  /** Steps down: the term's signal aborts, running work is awaited, the lease is released for a prompt successor. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#tick !== undefined) this.#clock.clearTimeout(this.#tick);
    await this.#campaigning;
    const release = this.#term?.keeper.release();
    await Promise.allSettled([...this.#running]);
    await release;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#tick = this.#clock.setTimeout(() => {
      this.#tick = undefined;
      this.#campaigning = this.#campaign().finally(() => {
        this.#campaigning = undefined;
      });
    }, ms);
  }

  /** One attempt to take the lease; while it is held, the keeper renews it and no attempt is scheduled. */
  async #campaign(): Promise<void> {
    const sentAt = this.#clock.monotonic();
    try {
      const result = await this.#store.acquire({
        name: this.name,
        owner: this.candidateId,
        ttlMs: this.#leaseMs,
        now: this.#clock.now(),
      });
      if (result.acquired && this.#stopped) {
        await this.#store.release(this.name, this.candidateId, result.grant.token);
      } else if (result.acquired) {
        this.#win(result.grant, sentAt);
        return;
      }
    } catch (error) {
      this.#emit({ type: 'store-error', error, leading: false });
    }
    this.#schedule(this.#retryEveryMs);
  }

  #win(grant: LeaseGrant, sentAt: number): void {
    const since = this.#clock.now();
    const keeper = new LeaseKeeper({
      store: this.#store,
      clock: this.#clock,
      grant,
      sentAt,
      ttlMs: this.#leaseMs,
      renewEveryMs: this.#renewEveryMs,
      safetyMarginMs: this.#marginMs,
      onRenewalError: (error) => this.#emit({ type: 'store-error', error, leading: true }),
      onLost: (reason) => {
        this.#term = undefined;
        this.#emit({
          type: 'lost',
          token: grant.token,
          reason: reason === 'released' ? 'stopped' : reason,
          heldMs: this.#clock.now() - since,
        });
        this.#schedule(this.#retryEveryMs);
      },
    });
    const term = { token: grant.token, since, signal: keeper.signal, keeper };
    this.#term = term;
    this.#emit({ type: 'elected', token: grant.token });
    const waiters = this.#electedWaiters;
    this.#electedWaiters = [];
    for (const resolve of waiters) resolve(term);
    for (const work of this.#works) this.#runWork(work, term);
  }

  #runWork(work: LeaderWork, term: LeadershipTerm): void {
    const running = (async () => {
      try {
        await work(term);
      } catch (error) {
        if (!term.signal.aborted) this.#emit({ type: 'work-failed', token: term.token, error });
      }
    })();
    this.#running.add(running);
    void running.finally(() => this.#running.delete(running));
  }

  #emit(detail: ElectionEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'leader-election',
      name: this.name,
      candidateId: this.candidateId,
      at: this.#clock.now(),
      ...detail,
    } as LeaderElectionEvent);
  }
}
