import type { CompiledSaga } from './definition.js';
import type { CompletedStep, FailedUndo, RecordedError, SagaRecord } from './saga-store.js';

/**
 * Everything a person needs to finish a saga by hand, raised when an undo kept failing past its retries: what
 * ran with which input and results, the failure that started compensation, the undo calls that gave up and
 * what is left to undo. Then fix the cause and call SagaEngine.retryUndo, or compensate by hand and call
 * SagaEngine.resolveStep for each failed undo; either way the engine goes on with the rest.
 */
export interface SagaOperatorAlert {
  readonly sagaId: string;
  readonly definition: string;
  readonly input: unknown;
  /** The step log: each completed step with its result and whether it is undone yet. */
  readonly completedSteps: readonly CompletedStep[];
  /** The do step whose failure started compensation. */
  readonly failure: { readonly step: string; readonly error: RecordedError } | undefined;
  /** The undo calls that gave up, with their last error. */
  readonly failedUndos: readonly FailedUndo[];
  /** Steps still to undo, stage by stage (the failed ones included), in the order the engine will undo them. */
  readonly remaining: readonly (readonly string[])[];
}

/** The stages still to undo: the definition's compensation stages less steps not completed or already undone. */
export function remainingStages(saga: CompiledSaga, record: SagaRecord): string[][] {
  const pending = new Set(record.steps.filter((s) => s.undone === undefined).map((s) => s.name));
  return saga.stages.map((stage) => stage.filter((name) => pending.has(name))).filter((s) => s.length > 0);
}

export function operatorAlert(saga: CompiledSaga, record: SagaRecord): SagaOperatorAlert {
  return {
    sagaId: record.sagaId,
    definition: record.definition,
    input: record.input,
    completedSteps: record.steps,
    failure:
      record.failure === undefined ? undefined : { step: record.failure.step, error: record.failure.error },
    failedUndos: record.failedUndos ?? [],
    remaining: remainingStages(saga, record),
  };
}

export function recordError(error: unknown): RecordedError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}
