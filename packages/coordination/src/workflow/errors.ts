import { StratusError } from '@stratus/core';

/** A workflow definition that cannot run: a bad name, version, step list or step. */
export class InvalidWorkflowDefinitionError extends StratusError {
  readonly definition: string;
  constructor(definition: string, reason: string) {
    super(
      'ERR_STRATUS_INVALID_WORKFLOW_DEFINITION',
      `Workflow definition "${definition}" is invalid: ${reason}`,
    );
    this.definition = definition;
  }
}

/** A workflow name (or name and version) that was never registered with this engine. */
export class UnknownWorkflowError extends StratusError {
  readonly workflow: string;
  constructor(workflow: string, version?: number) {
    super(
      'ERR_STRATUS_UNKNOWN_WORKFLOW',
      `No workflow named ${JSON.stringify(workflow)}${version === undefined ? '' : ` at version ${version}`} is registered`,
    );
    this.workflow = workflow;
  }
}

/** Registering a second definition under a name and version already taken. */
export class DuplicateWorkflowError extends StratusError {
  readonly workflow: string;
  constructor(workflow: string, version: number) {
    super(
      'ERR_STRATUS_DUPLICATE_WORKFLOW',
      `Workflow ${JSON.stringify(workflow)} version ${version} is already registered`,
    );
    this.workflow = workflow;
  }
}

export class WorkflowNotFoundError extends StratusError {
  readonly workflowId: string;
  constructor(workflowId: string) {
    super('ERR_STRATUS_WORKFLOW_NOT_FOUND', `No workflow with id ${JSON.stringify(workflowId)}`);
    this.workflowId = workflowId;
  }
}

/** `run.result()` of a workflow that ended failed; `context` is what its alert carried. */
export class WorkflowFailedError extends StratusError {
  readonly workflowId: string;
  readonly context: unknown;
  constructor(workflowId: string, reason: string, context?: unknown) {
    super('ERR_STRATUS_WORKFLOW_FAILED', `Workflow "${workflowId}" failed: ${reason}`);
    this.workflowId = workflowId;
    this.context = context;
  }
}

/** A started workflow id already used by a workflow of another name. */
export class WorkflowIdConflictError extends StratusError {
  readonly workflowId: string;
  constructor(workflowId: string, existing: string) {
    super(
      'ERR_STRATUS_WORKFLOW_ID_CONFLICT',
      `Workflow id ${JSON.stringify(workflowId)} is already used by a workflow of "${existing}"`,
    );
    this.workflowId = workflowId;
  }
}

/**
 * Thrown by a step to fail its workflow at once, without retries (a non-transient error: a card declined, an
 * invalid order). Any other error counts as a failure the Supervisor retries up to the threshold.
 */
export class PermanentStepError extends StratusError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_STRATUS_PERMANENT_STEP', message, options);
  }
}

/**
 * The step's Complete By passed: the reason its signal aborts with, and what the engine records for it. Its agent
 * stops and its result, if any, is ignored.
 */
export class StepDeadlineError extends StratusError {
  readonly workflowId: string;
  readonly step: string;
  /** The Complete By that passed, in epoch ms. */
  readonly completeBy: number;
  constructor(workflowId: string, step: string, completeBy: number, options?: { cause?: unknown }) {
    super(
      'ERR_STRATUS_STEP_DEADLINE',
      `Step "${step}" of workflow "${workflowId}" missed its complete-by (${isoTime(completeBy)})`,
      options,
    );
    this.workflowId = workflowId;
    this.step = step;
    this.completeBy = completeBy;
  }
}

/** A step waiting for a signal whose deadline passed, with no timeout branch. */
export class SignalTimeoutError extends StratusError {
  readonly signalName: string;
  constructor(step: string, signalName: string) {
    super('ERR_STRATUS_SIGNAL_TIMEOUT', `Step "${step}" waited for signal "${signalName}" past its deadline`);
    this.signalName = signalName;
  }
}

/** An epoch ms as ISO text; as a number when it is no valid time, so that building the error never throws. */
function isoTime(epochMs: number): string {
  const at = new Date(epochMs);
  return Number.isNaN(at.getTime()) ? String(epochMs) : at.toISOString();
}
