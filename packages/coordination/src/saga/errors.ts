import { StratusError } from '@stratus/core';

/** A saga definition that cannot run: a bad name, step, retry policy or compensation order. */
export class InvalidSagaDefinitionError extends StratusError {
  readonly definition: string;
  constructor(definition: string, reason: string) {
    super('ERR_STRATUS_INVALID_SAGA_DEFINITION', `Saga definition "${definition}" is invalid: ${reason}`);
    this.definition = definition;
  }
}

/** A saga names a definition the engine was not given (recovery needs every definition up front). */
export class UnknownSagaDefinitionError extends StratusError {
  readonly definition: string;
  constructor(definition: string) {
    super('ERR_STRATUS_UNKNOWN_SAGA_DEFINITION', `No saga definition named ${JSON.stringify(definition)}`);
    this.definition = definition;
  }
}

export class SagaNotFoundError extends StratusError {
  readonly sagaId: string;
  constructor(sagaId: string) {
    super('ERR_STRATUS_SAGA_NOT_FOUND', `No saga with id ${JSON.stringify(sagaId)}`);
    this.sagaId = sagaId;
  }
}

/**
 * The saga's record changed under this engine (another engine drives it too): this engine stops driving it. Its
 * step calls are safe to have overlapped, since both used the same idempotency keys.
 */
export class SagaConflictError extends StratusError {
  readonly sagaId: string;
  constructor(sagaId: string, expectedVersion: number) {
    super(
      'ERR_STRATUS_SAGA_CONFLICT',
      `Saga "${sagaId}" changed elsewhere (expected version ${expectedVersion}); this engine stops driving it`,
    );
    this.sagaId = sagaId;
  }
}

/** An operator call that does not fit the saga's state (it is not waiting for an operator, or no such step). */
export class SagaStateError extends StratusError {
  readonly sagaId: string;
  constructor(sagaId: string, reason: string) {
    super('ERR_STRATUS_SAGA_STATE', `Saga "${sagaId}": ${reason}`);
    this.sagaId = sagaId;
  }
}

/** A step's do or undo call took longer than its timeoutMs (it counts as a failed attempt). */
export class SagaStepTimeoutError extends StratusError {
  readonly step: string;
  readonly timeoutMs: number;
  constructor(step: string, phase: 'do' | 'undo', timeoutMs: number) {
    super('ERR_STRATUS_SAGA_STEP_TIMEOUT', `Saga step "${step}" (${phase}) timed out after ${timeoutMs} ms`);
    this.step = step;
    this.timeoutMs = timeoutMs;
  }
}
