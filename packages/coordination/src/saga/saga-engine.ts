import { assertObject, type Clock, EventEmitter, InvalidOptionsError, systemClock } from '@stratus/core';
import { type CompiledSaga, type CompiledStep, compileSaga, type SagaDefinition } from './definition.js';
import {
  SagaConflictError,
  SagaNotFoundError,
  SagaStateError,
  UnknownSagaDefinitionError,
} from './errors.js';
import { operatorAlert, recordError, remainingStages, type SagaOperatorAlert } from './operator-alert.js';
import type { SagaEvent, SagaEventDetail } from './saga-events.js';
import {
  ACTIVE_SAGA_STATUSES,
  type CompletedStep,
  checkSagaId,
  type FailedUndo,
  type SagaRecord,
  type SagaStore,
} from './saga-store.js';
import { StepCaller } from './step-attempts.js';

export interface SagaEngineOptions {
  readonly store: SagaStore;
  /** Every definition whose sagas this engine may run or resume (names must differ). */
  // biome-ignore lint/suspicious/noExplicitAny: definitions of any input type
  readonly definitions: readonly SagaDefinition<any>[];
  /** Time of records, backoff waits and step timeouts; default the system clock. */
  readonly clock?: Clock;
  /** Names this engine in its events; default 'saga-engine'. */
  readonly name?: string;
}

export interface RecoveryReport {
  /** Sagas that were running or compensating, as they ended after this engine resumed them. */
  readonly resumed: readonly SagaRecord[];
  /** Sagas another engine changed while this one resumed them (it stopped driving those). */
  readonly conflicts: readonly string[];
  /** Sagas waiting for an operator; their alert is raised again (an alert lost in a crash is not lost). */
  readonly needsOperator: readonly SagaOperatorAlert[];
}

/**
 * Runs sagas (Compensating Transaction): each step's do in order, every completion stored before the next step,
 * so the log always holds what compensation needs. A do that keeps failing (retried with its policy's backoff)
 * turns the saga to compensating: the completed steps are undone in the definition's order, each undo retried
 * with backoff; an undo that gives up stops the saga in needs-operator with an alert. Every call gets an
 * idempotency key (`<sagaId>:<step>`, `<sagaId>:<step>:undo`) that stays the same across retries and restarts, so
 * a service that records it acts once even when the engine crashed between its call and the log write.
 *
 * After a restart, `recover()` resumes every saga that was running or compensating. Run one engine's recovery at
 * a time (e.g. under LeaderElection); two engines driving one saga are caught by the store's version check.
 */
export class SagaEngine {
  readonly name: string;
  readonly store: SagaStore;
  readonly clock: Clock;
  readonly events = new EventEmitter<SagaEvent>();
  readonly #sagas = new Map<string, CompiledSaga>();
  readonly #running = new Map<string, Promise<SagaRecord>>();
  readonly #caller: StepCaller;

  constructor(options: SagaEngineOptions) {
    assertObject('options', options as unknown);
    const { store, definitions, clock = systemClock, name = 'saga-engine' } = options;
    if (typeof store !== 'object' || store === null || typeof store.update !== 'function')
      throw new InvalidOptionsError('store', 'expected a SagaStore');
    if (!Array.isArray(definitions) || definitions.length === 0)
      throw new InvalidOptionsError('definitions', 'expected at least one saga definition');
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function')
      throw new InvalidOptionsError('clock', 'expected a Clock');
    if (typeof name !== 'string' || name.length === 0)
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    for (const definition of definitions) {
      const compiled = compileSaga(definition);
      if (this.#sagas.has(compiled.name))
        throw new InvalidOptionsError('definitions', `two definitions are named "${compiled.name}"`);
      this.#sagas.set(compiled.name, compiled);
    }
    this.store = store;
    this.clock = clock;
    this.name = name;
    this.#caller = new StepCaller(clock, (detail) => this.#emit(detail));
  }

  /**
   * Starts saga `sagaId` of `definition` and resolves with its record once it is over (completed, compensated)
   * or waiting for an operator. Idempotent: starting an existing saga resumes it if it is still active and
   * otherwise returns its record, so a caller that retries a start cannot run a saga twice.
   */
  async start<Input>(
    definition: SagaDefinition<Input> | string,
    sagaId: string,
    input: Input,
  ): Promise<SagaRecord> {
    const saga = this.#saga(typeof definition === 'string' ? definition : definition?.name);
    checkSagaId(sagaId);
    const running = this.#running.get(sagaId);
    if (running !== undefined) return running;
    const now = this.clock.now();
    const record: SagaRecord = {
      sagaId,
      definition: saga.name,
      input: input === undefined ? null : input,
      status: 'running',
      steps: [],
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    if (await this.store.insert(record)) {
      this.#emit({ type: 'started', sagaId, definition: saga.name });
      return this.#track(saga, record);
    }
    const existing = await this.#load(sagaId);
    if (existing.definition !== saga.name)
      throw new SagaStateError(sagaId, `it exists as a saga of "${existing.definition}", not "${saga.name}"`);
    return this.resume(sagaId);
  }

  /** Drives a stored saga on from where its log stands (no-op for one that is over or waiting for an operator). */
  async resume(sagaId: string): Promise<SagaRecord> {
    checkSagaId(sagaId);
    const running = this.#running.get(sagaId);
    if (running !== undefined) return running;
    const record = await this.#load(sagaId);
    if (!ACTIVE_SAGA_STATUSES.includes(record.status)) return record;
    const saga = this.#saga(record.definition);
    this.#emit({ type: 'resumed', sagaId, definition: saga.name, status: record.status });
    return this.#track(saga, record);
  }

  /** The recovery scan: resumes every running or compensating saga in the store and re-raises operator alerts. */
  async recover(): Promise<RecoveryReport> {
    const resuming: Promise<SagaRecord>[] = [];
    const needsOperator: SagaOperatorAlert[] = [];
    for await (const record of this.#scan(['running', 'compensating', 'needs-operator'])) {
      if (record.status === 'needs-operator') {
        const alert = operatorAlert(this.#saga(record.definition), record);
        needsOperator.push(alert);
        this.#emit({ type: 'needs-operator', sagaId: record.sagaId, definition: record.definition, alert });
      } else {
        resuming.push(this.resume(record.sagaId));
      }
    }
    const settled = await Promise.allSettled(resuming);
    const resumed: SagaRecord[] = [];
    const conflicts: string[] = [];
    for (const outcome of settled) {
      if (outcome.status === 'fulfilled') resumed.push(outcome.value);
      else if (outcome.reason instanceof SagaConflictError) conflicts.push(outcome.reason.sagaId);
      else throw outcome.reason;
    }
    return { resumed, conflicts, needsOperator };
  }

  /** The stored record, or undefined. */
  get(sagaId: string): Promise<SagaRecord | undefined> {
    checkSagaId(sagaId);
    return this.store.get(sagaId);
  }

  /** The operator alert of a saga waiting for an operator. */
  async alert(sagaId: string): Promise<SagaOperatorAlert> {
    const record = await this.#load(sagaId);
    if (record.status !== 'needs-operator')
      throw new SagaStateError(sagaId, 'it is not waiting for an operator');
    return operatorAlert(this.#saga(record.definition), record);
  }

  /** Operator: the cause is fixed; run the failed undo calls again (fresh retries) and go on compensating. */
  async retryUndo(sagaId: string): Promise<SagaRecord> {
    const record = await this.#waitingForOperator(sagaId);
    const next = await this.#write(record, { status: 'compensating', failedUndos: undefined });
    return this.#track(this.#saga(record.definition), next);
  }

  /**
   * Operator: step `step` was compensated by hand; record it as undone (with `note`) and go on compensating once
   * no failed undo is left.
   */
  async resolveStep(
    sagaId: string,
    step: string,
    options: { readonly note?: string } = {},
  ): Promise<SagaRecord> {
    const record = await this.#waitingForOperator(sagaId);
    if (options.note !== undefined && typeof options.note !== 'string')
      throw new InvalidOptionsError('note', 'expected a string');
    const completed = record.steps.find((s) => s.name === step);
    if (completed === undefined || completed.undone !== undefined)
      throw new SagaStateError(sagaId, `step "${String(step)}" is not a completed step still to undo`);
    const undone = {
      at: this.clock.now(),
      by: 'operator' as const,
      ...(options.note ? { note: options.note } : {}),
    };
    const failedUndos = (record.failedUndos ?? []).filter((f) => f.step !== step);
    const next = await this.#write(record, {
      steps: record.steps.map((s) => (s.name === step ? { ...s, undone } : s)),
      ...(failedUndos.length > 0 ? { failedUndos } : { status: 'compensating', failedUndos: undefined }),
    });
    this.#emit({ type: 'step-undone', sagaId, definition: record.definition, step, by: 'operator' });
    if (next.status !== 'compensating') return next;
    return this.#track(this.#saga(record.definition), next);
  }

  async #waitingForOperator(sagaId: string): Promise<SagaRecord> {
    checkSagaId(sagaId);
    if (this.#running.has(sagaId)) throw new SagaStateError(sagaId, 'it is being driven by this engine');
    const record = await this.#load(sagaId);
    if (record.status !== 'needs-operator')
      throw new SagaStateError(sagaId, `it is ${record.status}, not waiting for an operator`);
    return record;
  }

  #track(saga: CompiledSaga, record: SagaRecord): Promise<SagaRecord> {
    const driving = this.#drive(saga, record).finally(() => this.#running.delete(record.sagaId));
    this.#running.set(record.sagaId, driving);
    return driving;
  }

  async #drive(saga: CompiledSaga, start: SagaRecord): Promise<SagaRecord> {
    let record = start;
    const { sagaId } = record;
    const definition = saga.name;
    while (record.status === 'running') {
      const next = saga.steps[record.steps.length];
      if (next === undefined) {
        record = await this.#write(record, { status: 'completed' });
        this.#emit({ type: 'completed', sagaId, definition });
        return record;
      }
      const name = next.step.name;
      const results = resultsOf(record.steps);
      // A result that cannot be stored counts as a failed attempt, before anything is logged.
      const call = { saga, step: next, phase: 'do', policy: next.retry, record } as const;
      const outcome = await this.#caller.attempt(call, async (context) =>
        toJson(await next.step.do({ ...context, results })),
      );
      if (outcome.ok) {
        const completed: CompletedStep = { name, result: outcome.value, completedAt: this.clock.now() };
        record = await this.#write(record, { steps: [...record.steps, completed] });
        this.#emit({ type: 'step-completed', sagaId, definition, step: name, attempts: outcome.attempts });
      } else {
        const error = recordError(outcome.error);
        const maybeActed: CompletedStep[] = next.step.undoOnFailure
          ? [{ name, result: null, completedAt: this.clock.now(), doFailed: true }]
          : [];
        record = await this.#write(record, {
          status: 'compensating',
          failure: { step: name, error, attempts: outcome.attempts },
          ...(maybeActed.length > 0 ? { steps: [...record.steps, ...maybeActed] } : {}),
        });
        this.#emit({ type: 'compensating', sagaId, definition, failedStep: name, error });
      }
    }
    if (record.status !== 'compensating') return record;
    return this.#compensate(saga, record);
  }

  async #compensate(saga: CompiledSaga, start: SagaRecord): Promise<SagaRecord> {
    let record = start;
    const { sagaId } = record;
    const definition = saga.name;
    // Undo calls of one stage finish in any order: their log writes go one at a time.
    let writes: Promise<unknown> = Promise.resolve();
    const serially = <T>(write: () => Promise<T>): Promise<T> => {
      const done = writes.then(write);
      writes = done.catch(() => {});
      return done;
    };
    for (const stage of remainingStages(saga, record)) {
      const failed: FailedUndo[] = [];
      await Promise.all(
        stage.map(async (name) => {
          const compiled = saga.byName.get(name) as CompiledStep;
          const undo = compiled.step.undo as NonNullable<CompiledStep['step']['undo']>;
          const logged = record.steps.find((s) => s.name === name) as CompletedStep;
          const results = resultsOf(record.steps);
          const call = { saga, step: compiled, phase: 'undo', policy: compiled.undoRetry, record } as const;
          const outcome = await this.#caller.attempt(call, (context) =>
            undo({ ...context, results, result: logged.result }),
          );
          if (!outcome.ok) {
            failed.push({ step: name, error: recordError(outcome.error), attempts: outcome.attempts });
            return;
          }
          await serially(async () => {
            const undone = { at: this.clock.now(), by: 'undo' as const };
            record = await this.#write(record, {
              steps: record.steps.map((s) => (s.name === name ? { ...s, undone } : s)),
            });
          });
          this.#emit({ type: 'step-undone', sagaId, definition, step: name, by: 'undo' });
        }),
      );
      if (failed.length > 0) {
        const order = new Map(stage.map((name, i) => [name, i]));
        failed.sort((a, b) => (order.get(a.step) ?? 0) - (order.get(b.step) ?? 0));
        record = await this.#write(record, { status: 'needs-operator', failedUndos: failed });
        this.#emit({ type: 'needs-operator', sagaId, definition, alert: operatorAlert(saga, record) });
        return record;
      }
    }
    record = await this.#write(record, { status: 'compensated' });
    this.#emit({ type: 'compensated', sagaId, definition });
    return record;
  }

  /** Writes the next version of a saga; SagaConflictError when someone else wrote first. */
  async #write(record: SagaRecord, changes: Partial<SagaRecord>): Promise<SagaRecord> {
    const next = { ...record, ...changes, version: record.version + 1, updatedAt: this.clock.now() };
    for (const key of Object.keys(changes) as (keyof SagaRecord)[]) {
      if (changes[key] === undefined) delete (next as Partial<SagaRecord>)[key];
    }
    if (!(await this.store.update(next))) throw new SagaConflictError(record.sagaId, record.version);
    return next;
  }

  async #load(sagaId: string): Promise<SagaRecord> {
    const record = await this.store.get(sagaId);
    if (record === undefined) throw new SagaNotFoundError(sagaId);
    return record;
  }

  async *#scan(statuses: SagaRecord['status'][]): AsyncGenerator<SagaRecord> {
    let after: string | undefined;
    for (;;) {
      const page = await this.store.list({ statuses, limit: 100, ...(after === undefined ? {} : { after }) });
      yield* page;
      if (page.length < 100) return;
      after = page[page.length - 1]?.sagaId;
    }
  }

  #saga(name: unknown): CompiledSaga {
    const saga = typeof name === 'string' ? this.#sagas.get(name) : undefined;
    if (saga === undefined) throw new UnknownSagaDefinitionError(String(name));
    return saga;
  }

  #emit(detail: SagaEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({ component: 'saga', name: this.name, at: this.clock.now(), ...detail } as SagaEvent);
  }
}

function resultsOf(steps: readonly CompletedStep[]): Record<string, unknown> {
  return Object.fromEntries(steps.map((s) => [s.name, s.result]));
}

/** A step's result as it will be stored: JSON (undefined becomes null). */
function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
