import type { Unsubscribe } from '@stratus/core';
import {
  type ClaimedStep,
  type ClaimRequest,
  initialState,
  type Recovery,
  type RecoveryCandidate,
  type StateRecord,
  type Submission,
  type SubmitResult,
  type Transition,
  transitioned,
  type WorkflowRecord,
  type WorkflowRun,
  type WorkflowStore,
} from './workflow-store.js';

/** Workflows in this process's memory: for tests and single-process use where losing them on exit is fine. */
export class MemoryWorkflowStore implements WorkflowStore {
  readonly kind = 'memory';
  readonly #runs = new Map<string, WorkflowRun>();
  readonly #states = new Map<string, StateRecord>();
  readonly #signals = new Map<string, string>();
  readonly #watchers = new Set<() => void>();

  async submit(submission: Submission): Promise<SubmitResult> {
    const existing = this.#runs.get(submission.workflowId);
    if (existing !== undefined) return { created: false, existing };
    const { workflowId, name, version, input, now } = submission;
    this.#runs.set(workflowId, {
      workflowId,
      name,
      version,
      input,
      status: 'running',
      result: null,
      error: null,
      createdAt: now,
      finishedAt: null,
    });
    this.#states.set(workflowId, initialState(submission));
    if (submission.claimBy === undefined) this.#wake();
    return { created: true };
  }

  async claim(request: ClaimRequest): Promise<ClaimedStep[]> {
    const { schedulerId, definitions, limit, now } = request;
    const wanted = new Set(definitions);
    const due: StateRecord[] = [];
    for (const state of this.#states.values()) {
      if (state.status === 'pending' && state.availableAt <= now && wanted.has(state.definition))
        due.push(state);
    }
    due.sort((a, b) => a.availableAt - b.availableAt);
    return due.slice(0, limit).map((state) => {
      const claimed: StateRecord = {
        ...state,
        status: 'processing',
        lockedBy: schedulerId,
        completeBy: now + state.timeoutMs,
        attempt: state.attempt + 1,
        updatedAt: now,
      };
      this.#states.set(state.workflowId, claimed);
      return { ...claimed, input: (this.#runs.get(state.workflowId) as WorkflowRun).input };
    });
  }

  async transition(transition: Transition): Promise<boolean> {
    const { workflowId, attempt, now, to } = transition;
    const state = this.#states.get(workflowId);
    if (
      state === undefined ||
      state.status !== 'processing' ||
      state.attempt !== attempt ||
      (state.completeBy ?? 0) < now
    ) {
      return false;
    }
    let next = transitioned(state, transition);
    // A signal that came while the step was processing makes the parked step available at once.
    if (
      to.kind === 'park' &&
      to.waitingFor !== null &&
      this.#signals.has(`${workflowId}\u0000${to.waitingFor}`)
    ) {
      next = { ...next, availableAt: now };
    }
    this.#states.set(workflowId, next);
    const run = this.#runs.get(workflowId) as WorkflowRun;
    if (to.kind === 'completed') {
      this.#runs.set(workflowId, { ...run, status: 'completed', result: to.result, finishedAt: now });
    } else if (to.kind === 'failed') {
      this.#runs.set(workflowId, { ...run, status: 'failed', error: to.error, finishedAt: now });
    } else if (to.kind === 'park' || (to.kind === 'step' && to.claimBy === undefined)) {
      this.#wake();
    }
    return true;
  }

  async dueForRecovery(now: number, limit: number): Promise<RecoveryCandidate[]> {
    const found: RecoveryCandidate[] = [];
    for (const state of this.#states.values()) {
      if (found.length >= limit) break;
      const overdue = state.status === 'processing' && (state.completeBy ?? 0) < now;
      const failed = state.status === 'error' && this.#runs.get(state.workflowId)?.status === 'running';
      if (overdue || failed) found.push(recoveryCandidate(state));
    }
    return found;
  }

  async recover(recovery: Recovery): Promise<boolean> {
    const { workflowId, status, attempt, failureCount, now, to } = recovery;
    const state = this.#states.get(workflowId);
    const run = this.#runs.get(workflowId);
    if (
      state === undefined ||
      run?.status !== 'running' ||
      state.status !== status ||
      state.attempt !== attempt ||
      state.failureCount !== failureCount
    ) {
      return false;
    }
    const moved = { lockedBy: null, completeBy: null, failureCount: failureCount + 1, updatedAt: now };
    if (to.kind === 'retry') {
      this.#states.set(workflowId, {
        ...state,
        ...moved,
        status: 'pending',
        availableAt: to.availableAt,
        lastError: to.error,
      });
      this.#wake();
    } else {
      this.#states.set(workflowId, { ...state, ...moved, status: 'error', lastError: to.error });
      this.#runs.set(workflowId, { ...run, status: 'failed', error: to.context, finishedAt: now });
    }
    return true;
  }

  async signal(workflowId: string, name: string, payload: string, now: number): Promise<boolean> {
    const key = `${workflowId}\u0000${name}`;
    if (this.#signals.has(key)) return false;
    this.#signals.set(key, payload);
    const state = this.#states.get(workflowId);
    if (state?.status === 'pending' && state.waitingFor === name) {
      this.#states.set(workflowId, {
        ...state,
        availableAt: Math.min(state.availableAt, now),
        updatedAt: now,
      });
      this.#wake();
    }
    return true;
  }

  async readSignal(workflowId: string, name: string): Promise<string | undefined> {
    return this.#signals.get(`${workflowId}\u0000${name}`);
  }

  async get(workflowId: string): Promise<WorkflowRecord | undefined> {
    const run = this.#runs.get(workflowId);
    const state = this.#states.get(workflowId);
    return run === undefined || state === undefined ? undefined : { run, state };
  }

  async nextAvailableAt(definitions: readonly string[]): Promise<number | undefined> {
    const wanted = new Set(definitions);
    let next: number | undefined;
    for (const state of this.#states.values()) {
      if (
        state.status === 'pending' &&
        wanted.has(state.definition) &&
        (next === undefined || state.availableAt < next)
      ) {
        next = state.availableAt;
      }
    }
    return next;
  }

  watch(listener: () => void): Unsubscribe {
    const entry = () => listener();
    this.#watchers.add(entry);
    return () => this.#watchers.delete(entry);
  }

  async close(): Promise<void> {
    this.#watchers.clear();
  }

  #wake(): void {
    if (this.#watchers.size === 0) return;
    queueMicrotask(() => {
      for (const watcher of this.#watchers) watcher();
    });
  }
}

/** A state record as the Supervisor sees it. */
export function recoveryCandidate(state: StateRecord): RecoveryCandidate {
  return {
    workflowId: state.workflowId,
    definition: state.definition,
    stepName: state.stepName,
    status: state.status as 'processing' | 'error',
    attempt: state.attempt,
    failureCount: state.failureCount,
    maxFailures: state.maxFailures,
    completeBy: state.completeBy,
    lockedBy: state.lockedBy,
    lastError: state.lastError,
  };
}
