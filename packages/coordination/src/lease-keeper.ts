import {
  assertDuration,
  type Clock,
  type Deadline,
  DeadlineScheduler,
  InvalidOptionsError,
  type TimerHandle,
} from '@stratus/core';
import { LeaseLostError } from './errors.js';
import type { LeaseGrant, LeaseStore } from './lease-store.js';

export type LeaseLossReason = 'renewal-refused' | 'expired' | 'released';

export interface LeaseKeeperOptions {
  readonly store: LeaseStore;
  readonly clock: Clock;
  readonly grant: LeaseGrant;
  /** The clock's monotonic time when the request that produced `grant` was sent. */
  readonly sentAt: number;
  readonly ttlMs: number;
  readonly renewEveryMs: number;
  /** The holder gives up this long before the lease would expire, unless a renewal succeeded by then. */
  readonly safetyMarginMs: number;
  readonly onLost: (reason: LeaseLossReason) => void;
  readonly onRenewalError: (error: unknown) => void;
}

/**
 * Keeps a granted lease: renews it every `renewEveryMs` (sooner after a failed attempt, so a short store outage does
 * not cost it), and aborts `signal` the moment it is lost — a renewal refused, or no renewal succeeded by the
 * lease's end (by this process's clock, counted from when the request was sent) less the safety margin, so the
 * holder stops before another can start. Leader Election and the distributed locks both hold leases through it.
 */
export class LeaseKeeper {
  readonly grant: LeaseGrant;
  readonly #options: LeaseKeeperOptions;
  // Made on first use of `signal`: aborting one costs far more than a lock's whole acquire and release on a fast
  // store (Node builds and dispatches an Event, and the reason is an Error with a stack), and most holds never
  // look at it.
  #controller: AbortController | undefined;
  #endReason: LeaseLossReason | undefined;
  #deadline = 0;
  // The next renewal, on the clock's shared DeadlineScheduler: a hold costs no timer of its own (a setTimeout and
  // clearTimeout pair is a tenth of a Redis lock's acquire and release), and the scheduler keeps the process alive
  // while renewals are due, as a held lease is work in progress.
  readonly #renewal: Deadline = {
    deadlineBucket: undefined,
    deadlineIndex: 0,
    expire: () => this.#renewDue(),
  };
  #deadlineTimer: TimerHandle | undefined;
  #renewing: Promise<void> | undefined;
  #ended = false;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.grant = options.grant;
    this.#deadline = options.sentAt + options.ttlMs - options.safetyMarginMs;
    this.#scheduleRenewal(options.renewEveryMs);
  }

  /** Aborts the moment the lease is lost or released (its reason a LeaseLostError); already aborted after that. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#endReason !== undefined) this.#abort(this.#endReason);
    }
    return this.#controller.signal;
  }

  get token(): number {
    return this.grant.token;
  }

  get held(): boolean {
    return !this.#ended;
  }

  /** Stops renewing and gives the lease back; false when it was already lost. */
  async release(): Promise<boolean> {
    if (this.#ended) return false;
    this.#end('released');
    if (this.#renewing !== undefined) await this.#renewing;
    const { store, grant } = this.#options;
    return store.release(grant.name, grant.owner, grant.token).catch(() => false);
  }

  /**
   * The deadline's own timer runs only while the lease is at risk: from a renewal's start until one succeeds. Until
   * then the renewal, due well before the deadline, stands in for it, so a short hold costs no timer at all.
   */
  #armDeadline(): void {
    if (this.#deadlineTimer !== undefined) return;
    const { clock } = this.#options;
    this.#deadlineTimer = clock.setTimeout(
      () => {
        this.#deadlineTimer = undefined;
        this.#end('expired');
      },
      Math.max(0, this.#deadline - clock.monotonic()),
      { unref: true },
    );
  }

  #extend(sentAt: number): void {
    const { clock, ttlMs, safetyMarginMs } = this.#options;
    this.#deadline = sentAt + ttlMs - safetyMarginMs;
    if (this.#deadlineTimer !== undefined) clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }

  #scheduleRenewal(ms: number): void {
    if (this.#ended) return;
    const { clock } = this.#options;
    DeadlineScheduler.for(clock).add(this.#renewal, clock.monotonic() + ms);
  }

  #renewDue(): void {
    // Late (the event loop was blocked): the lease may be another's already.
    if (this.#options.clock.monotonic() >= this.#deadline) {
      this.#end('expired');
      return;
    }
    this.#armDeadline();
    this.#renewing = this.#renew().finally(() => {
      this.#renewing = undefined;
    });
  }

  async #renew(): Promise<void> {
    const { store, clock, grant, ttlMs, renewEveryMs } = this.#options;
    const sentAt = clock.monotonic();
    let renewed: LeaseGrant | undefined;
    try {
      renewed = await store.renew(grant.name, grant.owner, grant.token, ttlMs, clock.now());
    } catch (error) {
      if (this.#ended) return;
      this.#options.onRenewalError(error);
      this.#scheduleRenewal(Math.max(1, Math.min(renewEveryMs, (this.#deadline - clock.monotonic()) / 2)));
      return;
    }
    if (this.#ended) {
      // Lost by the deadline while the renewal was in flight: give back what the store just extended.
      if (renewed !== undefined) await store.release(grant.name, grant.owner, grant.token).catch(() => false);
      return;
    }
    if (renewed === undefined) {
      this.#end('renewal-refused');
      return;
    }
    this.#extend(sentAt);
    this.#scheduleRenewal(renewEveryMs);
  }

  #end(reason: LeaseLossReason): void {
    if (this.#ended) return;
    this.#ended = true;
    const { clock } = this.#options;
    DeadlineScheduler.for(clock).remove(this.#renewal);
    if (this.#deadlineTimer !== undefined) clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    this.#endReason = reason;
    if (this.#controller !== undefined) this.#abort(reason);
    this.#options.onLost(reason);
  }

  #abort(reason: LeaseLossReason): void {
    this.#controller?.abort(new LeaseLostError(this.grant.name, reason));
  }
}

/** Checks a lease duration with its renewal period and safety margin, filling in the defaults. */
export function checkLeaseTiming(
  leaseMs: number,
  renewEveryMs: number | undefined,
  safetyMarginMs: number | undefined,
  leaseOption = 'leaseMs',
): { renewEveryMs: number; safetyMarginMs: number } {
  assertDuration(leaseOption, leaseMs, { allowZero: false });
  const renew = renewEveryMs ?? leaseMs / 3;
  assertDuration('renewEveryMs', renew, { allowZero: false });
  if (renew >= leaseMs) throw new InvalidOptionsError('renewEveryMs', `must be shorter than ${leaseOption}`);
  const margin = safetyMarginMs ?? Math.min(1000, leaseMs / 10);
  assertDuration('safetyMarginMs', margin);
  if (renew + margin >= leaseMs) {
    throw new InvalidOptionsError(
      'safetyMarginMs',
      `renewEveryMs + safetyMarginMs must be below ${leaseOption}`,
    );
  }
  return { renewEveryMs: renew, safetyMarginMs: margin };
}
