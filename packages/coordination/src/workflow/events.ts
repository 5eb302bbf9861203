import type { StratusEvent } from '@stratus/core';

/** What a failed workflow's alert carries, also kept as the workflow's error in the store. */
export interface WorkflowFailureContext {
  readonly workflowId: string;
  readonly workflow: string;
  readonly version: number;
  readonly step: string;
  readonly failureCount: number;
  /** The last error's message. */
  readonly error: string;
  readonly reason: 'threshold' | 'permanent' | 'signal-timeout';
}

type WorkflowEventDetail =
  | {
      readonly type: 'submitted';
      readonly workflowId: string;
      readonly workflow: string;
      readonly version: number;
    }
  | {
      readonly type: 'step-started';
      readonly workflowId: string;
      readonly step: string;
      readonly attempt: number;
    }
  | {
      readonly type: 'step-completed';
      readonly workflowId: string;
      readonly step: string;
      readonly attempt: number;
      readonly durationMs: number;
    }
  | {
      readonly type: 'step-waiting';
      readonly workflowId: string;
      readonly step: string;
      readonly until: number;
      readonly signal: string | null;
    }
  | {
      readonly type: 'step-failed';
      readonly workflowId: string;
      readonly step: string;
      readonly attempt: number;
      /** error: the step threw (the Supervisor retries it); deadline: Complete By passed, the result is ignored. */
      readonly reason: 'error' | 'deadline' | 'permanent' | 'signal-timeout';
      readonly error: unknown;
    }
  /** A write refused because the claim was no longer this Scheduler's (recovered, or late). */
  | {
      readonly type: 'step-superseded';
      readonly workflowId: string;
      readonly step: string;
      readonly attempt: number;
    }
  | {
      readonly type: 'retried';
      readonly workflowId: string;
      readonly step: string;
      readonly failureCount: number;
      readonly availableAt: number;
      readonly reason: 'timeout' | 'error';
    }
  | { readonly type: 'completed'; readonly workflowId: string; readonly durationMs: number }
  /** The alert: the workflow failed for good and needs an operator. */
  | { readonly type: 'failed'; readonly workflowId: string; readonly context: WorkflowFailureContext }
  | { readonly type: 'store-error'; readonly error: unknown };

export type WorkflowEvent = StratusEvent & {
  readonly component: 'workflow-engine' | 'workflow-supervisor';
} & WorkflowEventDetail;

export type WorkflowEventType = WorkflowEvent['type'];
