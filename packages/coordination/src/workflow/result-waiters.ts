/**
 * The callers of `run.result()`. A workflow this engine finishes settles its waiters at once; one finished
 * elsewhere (another process, the Supervisor) is found by re-reading the store every `pollMs`.
 */
import type { Clock } from '@stratus/core';
import { WorkflowFailedError, WorkflowNotFoundError } from './errors.js';
import type { WorkflowFailureContext } from './events.js';
import type { WorkflowStore } from './workflow-store.js';

export interface ResultWaitersOptions {
  readonly store: WorkflowStore;
  readonly clock: Clock;
  readonly pollMs: number;
  /** True once the engine closes: the store is no longer polled. */
  closed(): boolean;
  storeError(error: unknown): void;
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class ResultWaiters {
  readonly #options: ResultWaitersOptions;
  readonly #waiters = new Map<string, Waiter[]>();

  constructor(options: ResultWaitersOptions) {
    this.#options = options;
  }

  /**
   * The workflow's result, or WorkflowFailedError. `drivenHere`: this engine is driving it and settles the waiter
   * itself, so the first read of the store can wait a poll.
   */
  wait(workflowId: string, drivenHere: boolean): Promise<unknown> {
    const { store, clock, pollMs } = this.#options;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      let waiters = this.#waiters.get(workflowId);
      if (waiters === undefined) {
        waiters = [];
        this.#waiters.set(workflowId, waiters);
      }
      waiters.push(waiter);
      const check = async () => {
        if (!this.#waiters.get(workflowId)?.includes(waiter)) return;
        try {
          const record = await store.get(workflowId);
          if (record === undefined) {
            this.#drop(workflowId, waiter);
            reject(new WorkflowNotFoundError(workflowId));
            return;
          }
          if (record.run.status === 'completed') {
            this.#drop(workflowId, waiter);
            resolve(JSON.parse(record.run.result ?? 'null'));
            return;
          }
          if (record.run.status === 'failed') {
            this.#drop(workflowId, waiter);
            const context = JSON.parse(record.run.error ?? 'null') as WorkflowFailureContext | null;
            reject(new WorkflowFailedError(workflowId, context?.error ?? 'unknown', context));
            return;
          }
        } catch (error) {
          this.#options.storeError(error);
        }
        if (!this.#options.closed()) clock.setTimeout(() => void check(), pollMs, { unref: true });
      };
      if (drivenHere) clock.setTimeout(() => void check(), pollMs, { unref: true });
      else void check();
    });
  }

  /** Settles the waiters of a workflow this process just finished: with its result, or failed with `failure`. */
  settle(workflowId: string, value: unknown, failure?: WorkflowFailureContext): void {
    const waiters = this.#waiters.get(workflowId);
    if (waiters === undefined) return;
    this.#waiters.delete(workflowId);
    for (const waiter of waiters) {
      if (failure === undefined) waiter.resolve(value);
      else waiter.reject(new WorkflowFailedError(workflowId, failure.error, failure));
    }
  }

  /** The engine closed: every waiter left is rejected. */
  rejectAll(): void {
    for (const [workflowId, waiters] of this.#waiters) {
      for (const waiter of waiters) waiter.reject(new WorkflowNotFoundError(workflowId));
    }
    this.#waiters.clear();
  }

  #drop(workflowId: string, waiter: Waiter): void {
    const waiters = this.#waiters.get(workflowId);
    if (waiters === undefined) return;
    const left = waiters.filter((w) => w !== waiter);
    if (left.length === 0) this.#waiters.delete(workflowId);
    else this.#waiters.set(workflowId, left);
  }
}
