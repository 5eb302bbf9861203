import {
  assertCount,
  assertDuration,
  type Backoff,
  exponentialBackoff,
  InvalidOptionsError,
} from '@stratus/core';
import { InvalidSagaDefinitionError } from './errors.js';

/** What a step's `do` gets: the saga's input, earlier steps' results and the key that makes the call idempotent. */
export interface StepContext<Input> {
  readonly sagaId: string;
  readonly input: Input;
  /** `<sagaId>:<step>`: the same on every attempt and after a crash; pass it to the service so it acts once. */
  readonly idempotencyKey: string;
  /** 1 on the first call in this engine; retries count up (a restarted engine starts again from 1). */
  readonly attempt: number;
  /** Results of the steps completed so far, by step name. */
  readonly results: Readonly<Record<string, unknown>>;
  /** Aborts when the step's timeoutMs passes. */
  readonly signal: AbortSignal;
}

/** What a step's `undo` gets: as for `do`, plus the result its `do` returned. */
export interface UndoContext<Input, Result> extends StepContext<Input> {
  /** `<sagaId>:<step>:undo`. */
  readonly idempotencyKey: string;
  readonly result: Result;
}

export interface StepRetryPolicy {
  /** Calls in all, the first included; default 3 for do, 5 for undo. */
  readonly maxAttempts?: number;
  /** Wait before each retry; default exponential from 100 ms (do) or 200 ms (undo), capped at 30 s. */
  readonly backoff?: Backoff;
  /** False for an error that retrying cannot fix (a declined card): no more attempts. Default: all retryable. */
  readonly retryable?: (error: unknown) => boolean;
}

export interface SagaStep<Input = unknown, Result = unknown> {
  /** Unique in the saga; part of the idempotency keys, so keep it stable across releases. */
  readonly name: string;
  /** The forward action; its result (JSON-serialisable) is stored and handed to undo and later steps. */
  do(context: StepContext<Input>): Promise<Result> | Result;
  /** The compensation; absent for a step with nothing to undo (a read, a final notification). */
  undo?(context: UndoContext<Input, Result>): Promise<void> | void;
  readonly retry?: StepRetryPolicy;
  readonly undoRetry?: StepRetryPolicy;
  /** Time allowed to one call of do or undo; a slower call counts as a failed attempt. Default none. */
  readonly timeoutMs?: number;
  /**
   * Undo this step too when its do finally fails, since a failed call may still have acted (a timeout, a lost
   * reply). Its undo then gets `result: null` and must be harmless when nothing happened. Default false: only
   * completed steps are compensated.
   */
  readonly undoOnFailure?: boolean;
}

/**
 * The order of compensation: 'reverse' (default, last completed first), 'parallel' (all at once), or a list of
 * stages run one after the other, each a step name or a group of names undone in parallel (e.g. the store most
 * sensitive to inconsistency first). A custom list must name every step that has an undo, once.
 */
export type CompensationOrder = 'reverse' | 'parallel' | readonly (string | readonly string[])[];

export interface SagaDefinition<Input = unknown> {
  /** Stored with each saga, so a restarted engine knows which definition resumes it; keep it stable. */
  readonly name: string;
  // biome-ignore lint/suspicious/noExplicitAny: each step has its own result type
  readonly steps: readonly SagaStep<Input, any>[];
  readonly compensation?: CompensationOrder;
}

/** Declares a saga, checked at once (InvalidSagaDefinitionError), typed by its input. */
export function defineSaga<Input>(definition: {
  readonly name: string;
  // biome-ignore lint/suspicious/noExplicitAny: each step has its own result type
  readonly steps: readonly SagaStep<Input, any>[];
  readonly compensation?: CompensationOrder;
}): SagaDefinition<Input> {
  const saga = definition as SagaDefinition<Input>;
  compileSaga(saga);
  return saga;
}

export interface ResolvedRetry {
  readonly maxAttempts: number;
  readonly backoff: Backoff;
  readonly retryable: (error: unknown) => boolean;
}

export interface CompiledStep {
  readonly step: SagaStep<unknown, unknown>;
  readonly index: number;
  readonly retry: ResolvedRetry;
  readonly undoRetry: ResolvedRetry;
}

/** A checked definition with defaults filled in, as the engine uses it. */
export interface CompiledSaga {
  readonly definition: SagaDefinition<unknown>;
  readonly name: string;
  readonly steps: readonly CompiledStep[];
  readonly byName: ReadonlyMap<string, CompiledStep>;
  /** Stages of step names with an undo, each stage's steps undone in parallel. */
  readonly stages: readonly (readonly string[])[];
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,99}$/;

const DEFAULT_DO_RETRY: ResolvedRetry = {
  maxAttempts: 3,
  backoff: exponentialBackoff({ initialMs: 100, maxMs: 30_000 }),
  retryable: () => true,
};
const DEFAULT_UNDO_RETRY: ResolvedRetry = {
  maxAttempts: 5,
  backoff: exponentialBackoff({ initialMs: 200, maxMs: 30_000 }),
  retryable: () => true,
};

export function compileSaga(definition: SagaDefinition<unknown>): CompiledSaga {
  if (typeof definition !== 'object' || definition === null)
    throw new InvalidOptionsError('definition', 'expected a saga definition');
  const name = definition.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new InvalidSagaDefinitionError(
      String(name),
      'name: expected 1-100 letters, digits and _ . : / - (not starting with . : / -)',
    );
  }
  const invalid = (reason: string) => new InvalidSagaDefinitionError(name, reason);
  if (!Array.isArray(definition.steps) || definition.steps.length === 0)
    throw invalid('steps: expected at least one step');
  const byName = new Map<string, CompiledStep>();
  const steps = definition.steps.map((raw, index) => {
    const step = raw as SagaStep<unknown, unknown>;
    if (typeof step !== 'object' || step === null) throw invalid(`steps[${index}]: expected an object`);
    if (typeof step.name !== 'string' || !NAME.test(step.name))
      throw invalid(`steps[${index}].name: expected 1-100 letters, digits and _ . : / -`);
    if (byName.has(step.name)) throw invalid(`steps[${index}].name: "${step.name}" is used twice`);
    if (typeof step.do !== 'function') throw invalid(`steps[${index}].do: expected a function`);
    if (step.undo !== undefined && typeof step.undo !== 'function')
      throw invalid(`steps[${index}].undo: expected a function or nothing`);
    if (step.undoOnFailure !== undefined && typeof step.undoOnFailure !== 'boolean')
      throw invalid(`steps[${index}].undoOnFailure: expected a boolean`);
    if (step.undoOnFailure === true && step.undo === undefined)
      throw invalid(`steps[${index}].undoOnFailure: the step has no undo`);
    if (step.timeoutMs !== undefined) {
      try {
        assertDuration(`steps[${index}].timeoutMs`, step.timeoutMs, { allowZero: false });
      } catch (error) {
        throw invalid((error as Error).message);
      }
    }
    const compiled: CompiledStep = {
      step,
      index,
      retry: resolveRetry(name, `steps[${index}].retry`, step.retry, DEFAULT_DO_RETRY),
      undoRetry: resolveRetry(name, `steps[${index}].undoRetry`, step.undoRetry, DEFAULT_UNDO_RETRY),
    };
    byName.set(step.name, compiled);
    return compiled;
  });
  const undoable = steps.filter((s) => s.step.undo !== undefined).map((s) => s.step.name);
  return {
    definition,
    name,
    steps,
    byName,
    stages: compensationStages(name, definition.compensation ?? 'reverse', undoable),
  };
}

function resolveRetry(
  saga: string,
  option: string,
  policy: StepRetryPolicy | undefined,
  defaults: ResolvedRetry,
): ResolvedRetry {
  if (policy === undefined) return defaults;
  const invalid = (reason: string) => new InvalidSagaDefinitionError(saga, `${option}: ${reason}`);
  if (typeof policy !== 'object' || policy === null) throw invalid('expected an object');
  const { maxAttempts = defaults.maxAttempts, backoff = defaults.backoff } = policy;
  try {
    assertCount(`${option}.maxAttempts`, maxAttempts, 1);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  if (typeof backoff !== 'object' || backoff === null || typeof backoff.delay !== 'function')
    throw invalid('backoff: expected a Backoff (see @stratus/core)');
  if (policy.retryable !== undefined && typeof policy.retryable !== 'function')
    throw invalid('retryable: expected a function');
  return { maxAttempts, backoff, retryable: policy.retryable ?? defaults.retryable };
}

function compensationStages(
  saga: string,
  order: CompensationOrder,
  undoable: readonly string[],
): (readonly string[])[] {
  if (order === 'reverse') return [...undoable].reverse().map((name) => [name]);
  if (order === 'parallel') return undoable.length === 0 ? [] : [[...undoable]];
  const invalid = (reason: string) => new InvalidSagaDefinitionError(saga, `compensation: ${reason}`);
  if (!Array.isArray(order)) throw invalid("expected 'reverse', 'parallel' or a list of stages");
  const seen = new Set<string>();
  const stages = order.map((stage, i) => {
    const names = typeof stage === 'string' ? [stage] : stage;
    if (!Array.isArray(names) || names.length === 0)
      throw invalid(`[${i}]: expected a step name or a non-empty list of them`);
    for (const name of names) {
      if (!undoable.includes(name)) throw invalid(`[${i}]: "${String(name)}" is not a step with an undo`);
      if (seen.has(name)) throw invalid(`[${i}]: "${name}" is listed twice`);
      seen.add(name);
    }
    return [...names] as string[];
  });
  const missing = undoable.filter((name) => !seen.has(name));
  if (missing.length > 0) throw invalid(`steps with an undo missing from it: ${missing.join(', ')}`);
  return stages;
}
