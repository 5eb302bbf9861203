/**
 * The Supervisor of the Scheduler Agent Supervisor pattern. It runs single-active through LeaderElection and, every
 * `intervalMs` while it leads, sweeps the State Store for steps still processing past their Complete By (a crashed
 * or hung Scheduler or Agent: the two look the same) and steps that failed. Each gets its failure count raised and
 * is made pending again after a backoff, until the count reaches the step's threshold: then the workflow is marked
 * failed and an alert (`failed` event) carries its context. It knows nothing of the business steps.
 *
 * Leadership keeps supervisors from doing the work twice, and every recovery is also a compare-and-set on what the
 * sweep saw (status, attempt, failure count), so even two supervisors racing (a paused leader resuming, or two
 * sweeps called by hand) never recover one step twice.
 */
import {
  assertCount,
  assertDuration,
  assertObject,
  type Backoff,
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import { LeaderElection, type LeadershipTerm } from '../leader-election.js';
import type { LeaseStore } from '../lease-store.js';
import { StepDeadlineError } from './errors.js';
import type { WorkflowEventDetail } from './event-detail.js';
import type { WorkflowEvent, WorkflowFailureContext } from './events.js';
import type { WorkflowEngine } from './workflow-engine.js';
import type { RecoveryCandidate, WorkflowStore } from './workflow-store.js';

export interface WorkflowSupervisorOptions {
  readonly store: WorkflowStore;
  /** Where supervisors elect their leader. */
  readonly leases: LeaseStore;
  /** The leadership's name; default 'workflow-supervisor'. */
  readonly name?: string;
  readonly candidateId?: string;
  readonly clock?: Clock;
  /** Time between sweeps; default 1 s. */
  readonly intervalMs?: number;
  /** Wait before retry number n of a step (n = its failure count); default exponential 100 ms ×2 up to 30 s. */
  readonly backoff?: Backoff;
  /** Steps handled per store read; default 100. */
  readonly batch?: number;
  /** The leadership lease; default 10 s. */
  readonly leaseMs?: number;
  /** An engine in this process: its result waiters learn of failures at once. */
  readonly engine?: WorkflowEngine;
}

export class WorkflowSupervisor {
  readonly name: string;
  readonly election: LeaderElection;
  readonly events = new EventEmitter<WorkflowEvent>();
  readonly #store: WorkflowStore;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #backoff: Backoff;
  readonly #batch: number;
  readonly #engine: WorkflowEngine | undefined;
  #wake: (() => void) | undefined;

  constructor(options: WorkflowSupervisorOptions) {
    assertObject('options', options as unknown);
    const {
      store,
      leases,
      name = 'workflow-supervisor',
      clock = systemClock,
      intervalMs = 1_000,
      backoff = exponentialBackoff({ initialMs: 100, maxMs: 30_000 }),
      batch = 100,
      leaseMs = 10_000,
      engine,
    } = options;
    if (typeof store?.dueForRecovery !== 'function' || typeof store.recover !== 'function') {
      throw new InvalidOptionsError('store', 'expected a WorkflowStore');
    }
    assertDuration('intervalMs', intervalMs, { allowZero: false });
    if (typeof backoff?.delay !== 'function') throw new InvalidOptionsError('backoff', 'expected a Backoff');
    assertCount('batch', batch, 1);
    this.name = name;
    this.#store = store;
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#backoff = backoff;
    this.#batch = batch;
    this.#engine = engine;
    this.election = new LeaderElection({
      store: leases,
      name,
      clock,
      leaseMs,
      ...(options.candidateId === undefined ? {} : { candidateId: options.candidateId }),
    });
    this.election.onElected((term) => this.#lead(term));
    engine?.events.on((event) => {
      if (event.type === 'step-failed' && event.reason === 'error') this.#wake?.();
    });
  }

  get isLeader(): boolean {
    return this.election.isLeader;
  }

  start(): this {
    this.election.start();
    return this;
  }

  async stop(): Promise<void> {
    await this.election.stop();
  }

  /**
   * One pass: recovers every step due now; returns how many this call recovered. The leader calls it every
   * `intervalMs`; tests and tools may call it directly.
   */
  async sweep(signal?: AbortSignal): Promise<number> {
    let recovered = 0;
    for (;;) {
      if (signal?.aborted) return recovered;
      const due = await this.#store.dueForRecovery(this.#clock.now(), this.#batch);
      let changed = 0;
      for (const candidate of due) {
        if (signal?.aborted) return recovered;
        if (await this.#recover(candidate)) changed++;
      }
      recovered += changed;
      if (due.length < this.#batch || changed === 0) return recovered;
    }
  }

  async #recover(candidate: RecoveryCandidate): Promise<boolean> {
    const now = this.#clock.now();
    const failureCount = candidate.failureCount + 1;
    const timedOut = candidate.status === 'processing';
    const error = timedOut
      ? `${deadlineMessage(candidate, now)} (locked by ${candidate.lockedBy ?? 'nobody'})`
      : (candidate.lastError ?? 'failed');
    const base = {
      workflowId: candidate.workflowId,
      status: candidate.status,
      attempt: candidate.attempt,
      failureCount: candidate.failureCount,
      now,
    };
    if (failureCount < candidate.maxFailures) {
      const previous = failureCount > 1 ? this.#backoff.delay(failureCount - 1, 0) : 0;
      const availableAt = now + Math.max(0, this.#backoff.delay(failureCount, previous));
      const done = await this.#store.recover({ ...base, to: { kind: 'retry', availableAt, error } });
      if (done) {
        this.#emit({
          type: 'retried',
          workflowId: candidate.workflowId,
          step: candidate.stepName,
          failureCount,
          availableAt,
          reason: timedOut ? 'timeout' : 'error',
        });
      }
      return done;
    }
    const at = candidate.definition.lastIndexOf('@');
    const context: WorkflowFailureContext = {
      workflowId: candidate.workflowId,
      workflow: candidate.definition.slice(0, at),
      version: Number(candidate.definition.slice(at + 1)),
      step: candidate.stepName,
      failureCount,
      error,
      reason: 'threshold',
    };
    const done = await this.#store.recover({
      ...base,
      to: { kind: 'failed', error, context: JSON.stringify(context) },
    });
    if (done) {
      this.#emit({ type: 'failed', workflowId: candidate.workflowId, context });
      this.#engine?.notifyFailed(context);
    }
    return done;
  }

  async #lead(term: LeadershipTerm): Promise<void> {
    while (!term.signal.aborted) {
      try {
        await this.sweep(term.signal);
      } catch (error) {
        this.#emit({ type: 'store-error', error });
      }
      await new Promise<void>((resolve) => {
        let timer: TimerHandle | undefined;
        const done = () => {
          if (timer !== undefined) this.#clock.clearTimeout(timer);
          term.signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve();
        };
        timer = this.#clock.setTimeout(done, this.#intervalMs, { unref: true });
        term.signal.addEventListener('abort', done, { once: true });
        this.#wake = done;
      });
    }
  }

  #emit(detail: WorkflowEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'workflow-supervisor',
      name: this.name,
      at: this.#clock.now(),
      ...detail,
    } as WorkflowEvent);
  }
}

/** What a step that timed out records: the message of the error its signal aborted with. */
function deadlineMessage(candidate: RecoveryCandidate, now: number): string {
  return new StepDeadlineError(candidate.workflowId, candidate.stepName, candidate.completeBy ?? now).message;
}
