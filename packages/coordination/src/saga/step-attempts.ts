/**
 * How the saga engine calls a step's do or undo: with retries after the policy's backoff, each call bounded by the
 * step's timeoutMs (SagaStepTimeoutError, its signal aborted), every failed call reported as a step-failed event.
 */
import type { Clock, TimerHandle } from '@stratus/core';
import type { CompiledSaga, CompiledStep, ResolvedRetry } from './definition.js';
import { SagaStepTimeoutError } from './errors.js';
import { recordError } from './operator-alert.js';
import type { SagaEventDetail } from './saga-events.js';
import type { SagaRecord } from './saga-store.js';

/** One do or undo of a saga's step. */
export interface StepCall {
  readonly saga: CompiledSaga;
  readonly step: CompiledStep;
  readonly phase: 'do' | 'undo';
  readonly policy: ResolvedRetry;
  readonly record: SagaRecord;
}

/** What every attempt of a call gets; the engine adds the results (and, for an undo, the do's result). */
export interface CallContext {
  readonly sagaId: string;
  readonly input: never;
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly signal: AbortSignal;
}

export type Attempt =
  | { readonly ok: true; readonly value: unknown; readonly attempts: number }
  | { readonly ok: false; readonly error: unknown; readonly attempts: number };

export class StepCaller {
  readonly #clock: Clock;
  readonly #emit: (detail: SagaEventDetail) => void;

  constructor(clock: Clock, emit: (detail: SagaEventDetail) => void) {
    this.#clock = clock;
    this.#emit = emit;
  }

  /** Calls `run` until it succeeds, its attempts run out or its error is not retryable. */
  async attempt(call: StepCall, run: (context: CallContext) => unknown): Promise<Attempt> {
    const { saga, phase, policy, record } = call;
    const step = call.step.step.name;
    const idempotencyKey = phase === 'do' ? `${record.sagaId}:${step}` : `${record.sagaId}:${step}:undo`;
    let previousDelay = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await this.#timed(step, phase, call.step.step.timeoutMs, (signal) =>
          run({ sagaId: record.sagaId, input: record.input as never, idempotencyKey, attempt, signal }),
        );
        return { ok: true, value, attempts: attempt };
      } catch (error) {
        const willRetry = attempt < policy.maxAttempts && policy.retryable(error);
        this.#emit({
          type: 'step-failed',
          sagaId: record.sagaId,
          definition: saga.name,
          step,
          phase,
          attempt,
          willRetry,
          error: recordError(error),
        });
        if (!willRetry) return { ok: false, error, attempts: attempt };
        previousDelay = policy.backoff.delay(attempt, previousDelay);
        await this.#sleep(previousDelay);
      }
    }
  }

  async #timed(
    step: string,
    phase: 'do' | 'undo',
    timeoutMs: number | undefined,
    call: (signal: AbortSignal) => unknown,
  ): Promise<unknown> {
    const controller = new AbortController();
    if (timeoutMs === undefined) return call(controller.signal);
    let timer: TimerHandle | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = this.#clock.setTimeout(() => {
        const error = new SagaStepTimeoutError(step, phase, timeoutMs);
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    try {
      return await Promise.race([Promise.resolve().then(() => call(controller.signal)), expired]);
    } finally {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    }
  }

  #sleep(ms: number): Promise<void> {
    if (!(ms > 0)) return Promise.resolve();
    return new Promise((resolve) => this.#clock.setTimeout(resolve, ms));
  }
}
