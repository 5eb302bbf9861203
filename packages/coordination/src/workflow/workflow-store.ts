/**
 * The State Store of the Scheduler Agent Supervisor pattern: one workflow row (name, version, input, outcome) and
 * one state record per workflow holding the catalogue's fields for its current step (status, locked-by,
 * complete-by, failure count) plus the attempt number that fences every write, the results so far and timestamps.
 * Every method is one atomic operation (one round trip on PostgreSQL), and every write after a claim is a
 * compare-and-set on (status, attempt), so a late or stale writer changes nothing.
 *
 * Values (input, results, signal payloads, errors) cross this interface as JSON text: the store never parses them.
 */
import type { Unsubscribe } from '@stratus/core';

/** The catalogue's ProcessState of the current step. */
export type StepStatus = 'pending' | 'processing' | 'processed' | 'error';
export type WorkflowStatus = 'running' | 'completed' | 'failed';

export interface StateRecord {
  readonly workflowId: string;
  /** `<name>@<version>` of the definition. */
  readonly definition: string;
  /** Index of the current step. */
  readonly step: number;
  readonly stepName: string;
  readonly status: StepStatus;
  /** The Scheduler that holds the step while it is processing. */
  readonly lockedBy: string | null;
  /** Epoch ms the holder must finish by; null unless processing. */
  readonly completeBy: number | null;
  /** Failures of the current step (timeouts included); reset when the workflow moves to another step. */
  readonly failureCount: number;
  readonly maxFailures: number;
  /**
   * The fencing number: every claim of any step of the workflow adds one, and every write after a claim must name
   * the attempt it belongs to, so a writer whose claim was recovered or moved on changes nothing.
   */
  readonly attempt: number;
  /** Complete By budget of one attempt of the current step. */
  readonly timeoutMs: number;
  /** A pending step is not claimed before this (timers, retry backoff). */
  readonly availableAt: number;
  /** A parked step's stored wake time (a sleep's end, a wait's deadline). */
  readonly waitUntil: number | null;
  /** The signal a parked step waits for. */
  readonly waitingFor: string | null;
  /** JSON object: results of the steps done so far, by step name. */
  readonly results: string;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface WorkflowRun {
  readonly workflowId: string;
  readonly name: string;
  readonly version: number;
  /** JSON. */
  readonly input: string;
  readonly status: WorkflowStatus;
  /** JSON of the last step's result, once completed. */
  readonly result: string | null;
  /** JSON of the failure's context (what the alert carried), once failed. */
  readonly error: string | null;
  readonly createdAt: number;
  readonly finishedAt: number | null;
}

export interface WorkflowRecord {
  readonly run: WorkflowRun;
  readonly state: StateRecord;
}

/** A step claimed by a Scheduler: its state record and the workflow's input. */
export interface ClaimedStep extends StateRecord {
  readonly input: string;
}

export interface FirstStep {
  readonly stepName: string;
  readonly timeoutMs: number;
  readonly maxFailures: number;
}

export interface Submission {
  readonly workflowId: string;
  readonly name: string;
  readonly version: number;
  readonly input: string;
  readonly now: number;
  readonly first: FirstStep;
  /** Submit the first step already claimed by this Scheduler (it runs it at once, saving a claim). */
  readonly claimBy?: string;
}

export type SubmitResult =
  | { readonly created: true }
  | { readonly created: false; readonly existing: WorkflowRun };

export type TransitionTarget =
  /** On to another step: pending from `availableAt`, or claimed at once by `claimBy` (attempt + 1). */
  | {
      readonly kind: 'step';
      readonly step: number;
      readonly stepName: string;
      readonly timeoutMs: number;
      readonly maxFailures: number;
      readonly availableAt: number;
      readonly claimBy?: string;
    }
  /** The same step waits: pending until `availableAt` (or a signal it waits for, which makes it available). */
  | {
      readonly kind: 'park';
      readonly availableAt: number;
      readonly waitUntil: number | null;
      readonly waitingFor: string | null;
    }
  | { readonly kind: 'completed'; readonly result: string }
  /** The step failed: the Supervisor retries it or gives up. */
  | { readonly kind: 'error'; readonly error: string }
  /** The workflow failed for good (a permanent step error, a wait without timeout branch). */
  | { readonly kind: 'failed'; readonly error: string };

export interface Transition {
  readonly workflowId: string;
  /** The attempt the writer holds: the write applies only while the step is processing under it, in time. */
  readonly attempt: number;
  readonly now: number;
  /** The new results JSON (written with every target but park). */
  readonly results: string;
  readonly to: TransitionTarget;
}

export interface ClaimRequest {
  readonly schedulerId: string;
  /** The definitions (`name@version`) this Scheduler can run. */
  readonly definitions: readonly string[];
  readonly limit: number;
  readonly now: number;
}

export interface RecoveryCandidate {
  readonly workflowId: string;
  readonly definition: string;
  readonly stepName: string;
  readonly status: 'processing' | 'error';
  readonly attempt: number;
  readonly failureCount: number;
  readonly maxFailures: number;
  readonly completeBy: number | null;
  readonly lockedBy: string | null;
  readonly lastError: string | null;
}

export interface Recovery {
  readonly workflowId: string;
  /** What the Supervisor saw: the write applies only if the record is still so. */
  readonly status: 'processing' | 'error';
  readonly attempt: number;
  readonly failureCount: number;
  readonly now: number;
  readonly to:
    | { readonly kind: 'retry'; readonly availableAt: number; readonly error: string }
    | { readonly kind: 'failed'; readonly error: string; readonly context: string };
}

export interface WorkflowStore {
  readonly kind: string;
  /** Inserts the workflow and its state record together (both or neither); an existing id is left as it is. */
  submit(submission: Submission): Promise<SubmitResult>;
  /** Claims up to `limit` pending, available steps atomically (no two Schedulers get the same one). */
  claim(request: ClaimRequest): Promise<ClaimedStep[]>;
  /** Moves a claimed step on; false when the claim is no longer the writer's (late, stale or recovered). */
  transition(transition: Transition): Promise<boolean>;
  /** Steps whose Complete By passed while processing, and failed steps of running workflows. */
  dueForRecovery(now: number, limit: number): Promise<RecoveryCandidate[]>;
  /** The Supervisor's compare-and-set: retry the step or fail the workflow; false when someone else acted. */
  recover(recovery: Recovery): Promise<boolean>;
  /** Records a signal (the first of a name wins) and makes a step waiting for it available; false if a duplicate. */
  signal(workflowId: string, name: string, payload: string, now: number): Promise<boolean>;
  readSignal(workflowId: string, name: string): Promise<string | undefined>;
  get(workflowId: string): Promise<WorkflowRecord | undefined>;
  /** When the next pending step of these definitions becomes available, if any is pending. */
  nextAvailableAt(definitions: readonly string[]): Promise<number | undefined>;
  /** Calls `listener` (soon, maybe spuriously) after a write anywhere left a pending step: a wake-up, not a queue. */
  watch(listener: () => void): Unsubscribe;
  /** Stops wake-ups; the pool or database stays the caller's. */
  close(): Promise<void>;
}

/** The state record of a fresh submission (shared by the adapters so they agree on every field). */
export function initialState(submission: Submission): StateRecord {
  const { workflowId, name, version, now, first, claimBy } = submission;
  return {
    workflowId,
    definition: `${name}@${version}`,
    step: 0,
    stepName: first.stepName,
    status: claimBy === undefined ? 'pending' : 'processing',
    lockedBy: claimBy ?? null,
    completeBy: claimBy === undefined ? null : now + first.timeoutMs,
    failureCount: 0,
    maxFailures: first.maxFailures,
    attempt: claimBy === undefined ? 0 : 1,
    timeoutMs: first.timeoutMs,
    availableAt: now,
    waitUntil: null,
    waitingFor: null,
    results: '{}',
    lastError: null,
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * The state record after a transition the store accepted (shared by the adapters and the step driver).
 * Built field by field rather than spread: it runs for every step, on records of several shapes (a claimed step
 * carries its input), and the spreads went megamorphic, a tenth of a three-step workflow's time on SQLite.
 */
export function transitioned(state: StateRecord, transition: Transition): StateRecord {
  const { now, to } = transition;
  let { step, stepName, failureCount, maxFailures, attempt, timeoutMs, availableAt, waitUntil, waitingFor } =
    state;
  let status: StepStatus = 'error';
  let lockedBy: string | null = null;
  let completeBy: number | null = null;
  let results = transition.results;
  let lastError = state.lastError;
  switch (to.kind) {
    case 'step':
      ({ step, stepName, maxFailures, timeoutMs, availableAt } = to);
      status = to.claimBy === undefined ? 'pending' : 'processing';
      lockedBy = to.claimBy ?? null;
      completeBy = to.claimBy === undefined ? null : now + to.timeoutMs;
      failureCount = 0;
      if (to.claimBy !== undefined) attempt += 1;
      waitUntil = null;
      waitingFor = null;
      lastError = null;
      break;
    case 'park':
      ({ availableAt, waitUntil, waitingFor } = to);
      status = 'pending';
      results = state.results;
      break;
    case 'completed':
      status = 'processed';
      break;
    case 'error':
      lastError = to.error;
      break;
    case 'failed':
      failureCount += 1;
      lastError = to.error;
      break;
  }
  return {
    workflowId: state.workflowId,
    definition: state.definition,
    step,
    stepName,
    status,
    lockedBy,
    completeBy,
    failureCount,
    maxFailures,
    attempt,
    timeoutMs,
    availableAt,
    waitUntil,
    waitingFor,
    results,
    lastError,
    createdAt: state.createdAt,
    updatedAt: now,
  };
}
