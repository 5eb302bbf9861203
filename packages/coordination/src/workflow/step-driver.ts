/**
 * The Scheduler's step driver: runs a claimed step, records its outcome in one compare-and-set write, and goes on
 * with the next step, which that same write claimed for this Scheduler (so a workflow costs one write per step and
 * no polling). A parked step, a failed one and the workflow's end stop the drive; the Supervisor or a later claim
 * takes it on from the store.
 */
import type { Clock } from '@stratus/core';
import type { CompiledWorkflowStep, WorkflowDefinition } from './definition.js';
import type { WorkflowEventDetail } from './event-detail.js';
import type { WorkflowFailureContext } from './events.js';
import type { StepExecutor } from './step-executor.js';
import type { StepOutcome } from './step-outcome.js';
import {
  type ClaimedStep,
  type TransitionTarget,
  transitioned,
  type WorkflowStore,
} from './workflow-store.js';

/** What the driver needs of its engine. */
export interface StepDriverHost {
  readonly store: WorkflowStore;
  readonly clock: Clock;
  readonly schedulerId: string;
  readonly executor: StepExecutor;
  /** True once the engine closes: no further step is claimed, and a step cut short is handed back. */
  closed(): boolean;
  emit(detail: WorkflowEventDetail): void;
  /** A step parked: the next due step may now be sooner. */
  parked(): void;
  /** The workflow ended here: its local result waiters settle. */
  finished(workflowId: string, value: unknown, failure?: WorkflowFailureContext): void;
}

interface Drive {
  readonly host: StepDriverHost;
  readonly definition: WorkflowDefinition<never, unknown>;
  readonly input: never;
  /** The results so far, by step name; each step's is added as it completes. */
  readonly results: Record<string, unknown>;
}

interface Plan {
  readonly to: TransitionTarget;
  /** The step the workflow goes on at; undefined when it completes (or did not complete a step). */
  readonly nextStep?: CompiledWorkflowStep<never>;
  /** The workflow fails for good. */
  readonly failure?: WorkflowFailureContext;
}

const stepError = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A value as the store keeps it: JSON, undefined as null. */
export const toJson = (value: unknown): string => JSON.stringify(value === undefined ? null : value);

/** Drives the workflow of `claimed` from its claimed step on, as long as this Scheduler holds it. */
export async function driveSteps(
  host: StepDriverHost,
  definition: WorkflowDefinition<never, unknown>,
  claimed: ClaimedStep,
): Promise<void> {
  const drive: Drive = {
    host,
    definition,
    input: JSON.parse(claimed.input) as never,
    results: JSON.parse(claimed.results) as Record<string, unknown>,
  };
  let state: ClaimedStep | undefined = claimed;
  while (state !== undefined) state = await driveStep(drive, state);
}

/** Runs one step and records its outcome; the claim of the next step when that write took it, else undefined. */
async function driveStep(drive: Drive, state: ClaimedStep): Promise<ClaimedStep | undefined> {
  const { host, definition, results } = drive;
  const { workflowId, attempt } = state;
  const step = definition.steps[state.step];
  if (step === undefined) return undefined;
  const startedAt = host.clock.monotonic();
  const attemptOf = { workflowId, step: step.name, attempt };
  host.emit({ type: 'step-started', ...attemptOf });
  const outcome = await host.executor.execute(step, state, drive.input, results);
  if (outcome.kind === 'late') {
    await missedCompleteBy(host, step, state, outcome.error);
    return undefined;
  }
  const now = host.clock.now();
  if (outcome.kind === 'done') results[step.name] = outcome.value === undefined ? null : outcome.value;
  const plan = planTransition(drive, step, state, outcome, now);
  const transition = {
    workflowId,
    attempt,
    now,
    results: outcome.kind === 'park' ? state.results : JSON.stringify(results),
    to: plan.to,
  };
  if (!(await host.store.transition(transition))) {
    host.emit({ type: 'step-superseded', ...attemptOf });
    return undefined;
  }
  if (outcome.kind === 'park') {
    const { until, signal } = outcome;
    host.emit({ type: 'step-waiting', workflowId, step: step.name, until, signal });
    host.parked();
    return undefined;
  }
  if (outcome.kind === 'error') {
    host.emit({ type: 'step-failed', ...attemptOf, reason: outcome.reason, error: outcome.error });
    if (plan.failure !== undefined) {
      host.emit({ type: 'failed', workflowId, context: plan.failure });
      host.finished(workflowId, undefined, plan.failure);
    }
    return undefined;
  }
  host.emit({ type: 'step-completed', ...attemptOf, durationMs: host.clock.monotonic() - startedAt });
  if (plan.nextStep === undefined) {
    host.emit({ type: 'completed', workflowId, durationMs: now - state.createdAt });
    host.finished(workflowId, outcome.value === undefined ? null : outcome.value);
    return undefined;
  }
  if (host.closed()) return undefined;
  // What the store now holds: the next step, claimed by this Scheduler under the next attempt.
  return { ...transitioned(state, transition), input: state.input };
}

/** Where the state record goes after `outcome`. */
function planTransition(
  drive: Drive,
  step: CompiledWorkflowStep<never>,
  state: ClaimedStep,
  outcome: Exclude<StepOutcome, { kind: 'late' }>,
  now: number,
): Plan {
  const { host, definition } = drive;
  switch (outcome.kind) {
    case 'done': {
      const nextStep = definition.steps[outcome.next ?? step.index + 1];
      if (nextStep === undefined) return { to: { kind: 'completed', result: toJson(outcome.value) } };
      return {
        nextStep,
        to: {
          kind: 'step',
          step: nextStep.index,
          stepName: nextStep.name,
          timeoutMs: nextStep.timeoutMs,
          maxFailures: nextStep.maxFailures,
          availableAt: now,
          ...(host.closed() ? {} : { claimBy: host.schedulerId }),
        },
      };
    }
    case 'park':
      return {
        to: {
          kind: 'park',
          availableAt: outcome.until,
          waitUntil: outcome.until,
          waitingFor: outcome.signal,
        },
      };
    case 'error': {
      if (outcome.reason === 'error') return { to: { kind: 'error', error: stepError(outcome.error) } };
      // Not retried: a permanent error, or a wait's deadline without a timeout branch.
      const failure: WorkflowFailureContext = {
        workflowId: state.workflowId,
        workflow: definition.name,
        version: definition.version,
        step: step.name,
        failureCount: state.failureCount + 1,
        error: stepError(outcome.error),
        reason: outcome.reason,
      };
      return { failure, to: { kind: 'failed', error: JSON.stringify(failure) } };
    }
  }
}

/**
 * The Agent missed Complete By (or the engine is closing): it returns nothing. A closing engine hands the step back
 * at once; otherwise the Supervisor finds it when Complete By has passed.
 */
async function missedCompleteBy(
  host: StepDriverHost,
  step: CompiledWorkflowStep<never>,
  state: ClaimedStep,
  error: unknown,
): Promise<void> {
  const { workflowId, attempt } = state;
  host.emit({ type: 'step-failed', workflowId, step: step.name, attempt, reason: 'deadline', error });
  if (!host.closed() || host.clock.now() > (state.completeBy ?? 0)) return;
  const now = host.clock.now();
  await host.store.transition({
    workflowId,
    attempt,
    now,
    results: state.results,
    to: { kind: 'park', availableAt: now, waitUntil: state.waitUntil ?? now, waitingFor: state.waitingFor },
  });
}
