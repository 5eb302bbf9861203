/**
 * Runs one claimed step of any kind and says what it came to. `run` and `agent` steps are activities: a function
 * in process, or a request to a RemoteAgent over request/reply, each given a signal that aborts at Complete By with
 * a StepDeadlineError (or when the engine closes), and whose result is dropped once Complete By has passed. Sleeps
 * and waits are durable timers.
 */
import type { Clock, TimerHandle } from '@stratus/core';
import {
  type Messaging,
  RemoteRequestError,
  RequestReplyClient,
  RequestTimeoutError,
} from '@stratus/messaging';
import type {
  AgentStep,
  CompiledWorkflowStep,
  RunStep,
  SleepStep,
  WorkflowStepContext,
} from './definition.js';
import { sleepOutcome, waitOutcome } from './durable-timers.js';
import { PermanentStepError, StepDeadlineError } from './errors.js';
import type { AgentRequest } from './remote-agent.js';
import type { StepOutcome } from './step-outcome.js';
import type { ClaimedStep, WorkflowStore } from './workflow-store.js';

export interface StepExecutorOptions {
  readonly store: WorkflowStore;
  readonly clock: Clock;
  /** Aborts every running step: the engine is closing. */
  readonly closing: AbortSignal;
  /** Needed by agent steps only. */
  readonly messaging: Messaging | undefined;
}

export class StepExecutor {
  readonly #store: WorkflowStore;
  readonly #clock: Clock;
  readonly #closing: AbortSignal;
  readonly #messaging: Messaging | undefined;
  #replies: Promise<RequestReplyClient> | undefined;

  constructor(options: StepExecutorOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#closing = options.closing;
    this.#messaging = options.messaging;
  }

  /** Runs `step` under its claim `state`; `accumulated` holds the results of the steps before it. */
  async execute(
    step: CompiledWorkflowStep<never>,
    state: ClaimedStep,
    input: never,
    accumulated: Record<string, unknown>,
  ): Promise<StepOutcome> {
    // A snapshot: a step must see only what came before it, even if it keeps the object.
    const results = Object.freeze({ ...accumulated });
    const completeBy = state.completeBy ?? this.#clock.now() + step.timeoutMs;
    const missed = (cause?: unknown) =>
      new StepDeadlineError(state.workflowId, step.name, completeBy, cause === undefined ? {} : { cause });
    const now = this.#clock.now();
    if (this.#closing.aborted) return { kind: 'late', error: this.#closing.reason };
    const context = (signal: () => AbortSignal): WorkflowStepContext<never> => ({
      workflowId: state.workflowId,
      step: step.name,
      input,
      results,
      idempotencyKey: `${state.workflowId}:${step.name}`,
      attempt: state.attempt,
      failures: state.failureCount,
      completeBy,
      get signal() {
        return signal();
      },
    });
    switch (step.kind) {
      case 'sleep':
        return sleepOutcome(
          step.definition as SleepStep<never>,
          state,
          now,
          context(() => this.#closing),
        );
      case 'wait':
        return waitOutcome(step, state, now, this.#store);
      case 'run':
        return this.#withDeadline(completeBy, missed, (signal) =>
          (step.definition as RunStep<never>).run(context(signal)),
        );
      case 'agent':
        return this.#withDeadline(completeBy, missed, async (signal) => {
          const replies = await this.#replyClient();
          const { signal: _, ...request } = context(signal);
          return replies.request((step.definition as AgentStep).agent, request satisfies AgentRequest, {
            timeoutMs: Math.max(1, completeBy - this.#clock.now()),
            signal: signal(),
            id: `${state.workflowId}:${step.name}:${state.attempt}`,
          });
        });
    }
  }

  /** Stops the reply client of agent steps, if one was started. */
  async close(): Promise<void> {
    const replies = await this.#replies?.catch(() => undefined);
    await replies?.close();
  }

  /**
   * Runs `work` with a signal that aborts at Complete By with the `missed` error (or at engine close); past it, the
   * result is dropped. The signal is made only when the step asks for it, and a step that returns without a promise
   * needs no timer: most steps are quick and synchronous, and the controller, its listeners and the timer were a
   * tenth of a three-step workflow's time.
   */
  async #withDeadline(
    completeBy: number,
    missed: (cause?: unknown) => StepDeadlineError,
    work: (signal: () => AbortSignal) => unknown,
  ): Promise<StepOutcome> {
    let controller: AbortController | undefined;
    let stoppedWith: { readonly reason: unknown } | undefined;
    let stopped: ((error: unknown) => void) | undefined;
    // Aborts the step's signal, if it has one yet, and ends the wait for its result.
    const stop = (reason: unknown) => {
      if (stoppedWith !== undefined) return;
      stoppedWith = { reason };
      controller?.abort(reason);
      stopped?.(reason);
    };
    const onClose = () => stop(this.#closing.reason);
    const signal = () => {
      if (controller === undefined) {
        controller = new AbortController();
        if (stoppedWith === undefined && this.#closing.aborted)
          stoppedWith = { reason: this.#closing.reason };
        if (stoppedWith !== undefined) controller.abort(stoppedWith.reason);
      }
      return controller.signal;
    };
    let value: unknown;
    try {
      value = work(signal);
    } catch (error) {
      return failed(error, missed);
    }
    if (!isPromiseLike(value)) {
      return this.#clock.now() > completeBy ? { kind: 'late', error: missed() } : { kind: 'done', value };
    }
    this.#closing.addEventListener('abort', onClose, { once: true });
    const timer: TimerHandle = this.#clock.setTimeout(
      () => stop(missed()),
      Math.max(0, completeBy - this.#clock.now()),
    );
    const deadline = new Promise<StepOutcome>((resolve) => {
      stopped = (error) => resolve({ kind: 'late', error });
    });
    const running = Promise.resolve(value).then(
      (result): StepOutcome => ({ kind: 'done', value: result }),
      (error: unknown) => failed(error, missed),
    );
    try {
      const outcome = await Promise.race([running, deadline]);
      if (stoppedWith !== undefined || this.#clock.now() > completeBy) {
        return { kind: 'late', error: stoppedWith === undefined ? missed() : stoppedWith.reason };
      }
      return outcome;
    } finally {
      this.#clock.clearTimeout(timer);
      this.#closing.removeEventListener('abort', onClose);
    }
  }

  #replyClient(): Promise<RequestReplyClient> {
    if (this.#replies === undefined) {
      const starting = new RequestReplyClient(this.#messaging as Messaging).start();
      // A start that failed (its store busy past the timeout, say) fails the steps waiting for it, not every
      // later agent step of this engine: the next one starts a client anew.
      starting.catch(() => {
        if (this.#replies === starting) this.#replies = undefined;
      });
      this.#replies = starting;
    }
    return this.#replies;
  }
}

/** What a step's error comes to. */
function failed(error: unknown, missed: (cause?: unknown) => StepDeadlineError): StepOutcome {
  // An agent's reply times out at Complete By.
  if (error instanceof RequestTimeoutError) return { kind: 'late', error: missed(error) };
  if (error instanceof PermanentStepError) return { kind: 'error', error, reason: 'permanent' };
  if (error instanceof RemoteRequestError)
    return { kind: 'error', error: new Error(error.remoteMessage), reason: 'error' };
  return { kind: 'error', error, reason: 'error' };
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
