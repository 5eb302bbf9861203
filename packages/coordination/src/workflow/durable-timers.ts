/**
 * Sleep and wait steps: durable timers. The wake time is kept in the state record (`waitUntil`) when the step first
 * parks, so a step claimed again after a restart goes on waiting for the same time instead of starting over.
 */
import { InvalidOptionsError } from '@stratus/core';
import type { CompiledWorkflowStep, SleepStep, WaitStep, WorkflowStepContext } from './definition.js';
import { SignalTimeoutError } from './errors.js';
import type { StepOutcome } from './step-outcome.js';
import type { ClaimedStep, WorkflowStore } from './workflow-store.js';

/** A sleep step: done once its wake time has come, else parked until then. */
export function sleepOutcome(
  definition: SleepStep<never>,
  state: ClaimedStep,
  now: number,
  context: WorkflowStepContext<never>,
): StepOutcome {
  if (state.waitUntil !== null) {
    return now >= state.waitUntil
      ? { kind: 'done', value: null }
      : { kind: 'park', until: state.waitUntil, signal: null };
  }
  const { sleepMs, sleepUntil } = definition;
  const until =
    sleepUntil !== undefined
      ? sleepUntil(context)
      : now + (typeof sleepMs === 'function' ? sleepMs(context) : (sleepMs ?? 0));
  if (!Number.isFinite(until)) {
    return { kind: 'error', error: new InvalidOptionsError('sleep', 'not a time'), reason: 'permanent' };
  }
  return until <= now ? { kind: 'done', value: null } : { kind: 'park', until, signal: null };
}

/** A wait step: done with the signal's payload, parked until its deadline, or at the deadline its timeout branch. */
export async function waitOutcome(
  step: CompiledWorkflowStep<never>,
  state: ClaimedStep,
  now: number,
  store: WorkflowStore,
): Promise<StepOutcome> {
  const { waitFor, waitMs } = step.definition as WaitStep;
  const payload = await store.readSignal(state.workflowId, waitFor);
  if (payload !== undefined) return { kind: 'done', value: JSON.parse(payload) };
  const until = state.waitUntil ?? now + waitMs;
  if (now < until) return { kind: 'park', until, signal: waitFor };
  if (step.timeoutGoto !== undefined) return { kind: 'done', value: null, next: step.timeoutGoto };
  return { kind: 'error', error: new SignalTimeoutError(step.name, waitFor), reason: 'signal-timeout' };
}
