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
import { LeaseLostError } from './errors.js';
import type { LeaseHolder, LeaseStore } from './lease-store.js';

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

interface Term extends LeadershipTerm {
  readonly controller: AbortController;
  /** Monotonic time after which this leader must consider itself deposed unless renewed. */
  deadline: number;
}

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
  #term: Term | undefined;
  #started = false;
  #stopped = false;
  #tick: TimerHandle | undefined;
  #deadlineTimer: TimerHandle | undefined;
  #busy: Promise<void> | undefined;
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
    assertDuration('leaseMs', leaseMs, { allowZero: false });
    const renewEveryMs = options.renewEveryMs ?? leaseMs / 3;
    assertDuration('renewEveryMs', renewEveryMs, { allowZero: false });
    if (renewEveryMs >= leaseMs)
      throw new InvalidOptionsError('renewEveryMs', 'must be shorter than leaseMs');
    const retryEveryMs = options.retryEveryMs ?? renewEveryMs;
    assertDuration('retryEveryMs', retryEveryMs, { allowZero: false });
    const marginMs = options.safetyMarginMs ?? Math.min(1000, leaseMs / 10);
    assertDuration('safetyMarginMs', marginMs);
    if (renewEveryMs + marginMs >= leaseMs) {
      throw new InvalidOptionsError('safetyMarginMs', 'renewEveryMs + safetyMarginMs must be below leaseMs');
    }
    this.#store = store;
    this.name = name;
    this.candidateId = candidateId;
    this.#clock = clock;
    this.#leaseMs = leaseMs;
    this.#renewEveryMs = renewEveryMs;
    this.#retryEveryMs = retryEveryMs;
    this.#marginMs = marginMs;
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
    await this.#busy;
    const term = this.#term;
    if (term !== undefined) this.#lose('stopped');
    await Promise.allSettled([...this.#running]);
    if (term !== undefined)
      await this.#store.release(this.name, this.candidateId, term.token).catch(() => false);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#tick = this.#clock.setTimeout(() => {
      this.#tick = undefined;
      this.#busy = this.#step().finally(() => {
        this.#busy = undefined;
      });
    }, ms);
  }

  /** One campaign or renewal round, then the next is scheduled. */
  async #step(): Promise<void> {
    const term = this.#term;
    const sentAt = this.#clock.monotonic();
    const now = this.#clock.now();
    try {
      if (term === undefined) {
        const result = await this.#store.acquire({
          name: this.name,
          owner: this.candidateId,
          ttlMs: this.#leaseMs,
          now,
        });
        if (this.#stopped) {
          if (result.acquired) await this.#store.release(this.name, this.candidateId, result.grant.token);
          return;
        }
        if (result.acquired) this.#win(result.grant.token, now, sentAt);
      } else {
        const renewed = await this.#store.renew(this.name, this.candidateId, term.token, this.#leaseMs, now);
        if (this.#term !== term) {
          // The term ended (deadline) while the renewal was in flight: give the lease back, campaign afresh.
          if (renewed) await this.#store.release(this.name, this.candidateId, term.token);
        } else if (renewed === undefined) {
          this.#lose('renewal-refused');
        } else {
          this.#extend(term, sentAt);
        }
      }
    } catch (error) {
      this.#emit({ type: 'store-error', error, leading: this.#term !== undefined });
    }
    this.#schedule(this.#term === undefined ? this.#retryEveryMs : this.#nextRenewal(this.#term));
  }

  /** After a failed renewal, retry sooner than the usual period, so a short outage does not cost the term. */
  #nextRenewal(term: Term): number {
    const left = term.deadline - this.#clock.monotonic();
    return Math.max(1, Math.min(this.#renewEveryMs, left / 2));
  }

  #win(token: number, now: number, sentAt: number): void {
    const controller = new AbortController();
    const term: Term = { token, since: now, signal: controller.signal, controller, deadline: 0 };
    this.#term = term;
    this.#extend(term, sentAt);
    this.#emit({ type: 'elected', token });
    const waiters = this.#electedWaiters;
    this.#electedWaiters = [];
    for (const resolve of waiters) resolve(term);
    for (const work of this.#works) this.#runWork(work, term);
  }

  /** The lease now runs until sentAt + leaseMs by the store; this leader stops a safety margin before that. */
  #extend(term: Term, sentAt: number): void {
    term.deadline = sentAt + this.#leaseMs - this.#marginMs;
    if (this.#deadlineTimer !== undefined) this.#clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = this.#clock.setTimeout(
      () => {
        this.#deadlineTimer = undefined;
        if (this.#term === term) this.#lose('expired');
      },
      Math.max(0, term.deadline - this.#clock.monotonic()),
      { unref: true },
    );
  }

  #lose(reason: LeadershipLossReason): void {
    const term = this.#term;
    if (term === undefined) return;
    this.#term = undefined;
    if (this.#deadlineTimer !== undefined) this.#clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    term.controller.abort(new LeaseLostError(this.name, reason));
    this.#emit({ type: 'lost', token: term.token, reason, heldMs: this.#clock.now() - term.since });
  }

  #runWork(work: LeaderWork, term: Term): void {
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
