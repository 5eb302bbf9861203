import { assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';

/**
 * Where a saga stands. running: doing its steps; compensating: undoing the completed ones; completed and
 * compensated: over; needs-operator: an undo kept failing past its retries, so a person must finish it (see
 * SagaEngine.retryUndo and resolveStep). running and compensating sagas are resumed by a recovery scan.
 */
export type SagaStatus = 'running' | 'compensating' | 'completed' | 'compensated' | 'needs-operator';

export const SAGA_STATUSES: readonly SagaStatus[] = [
  'running',
  'compensating',
  'completed',
  'compensated',
  'needs-operator',
];

/** The statuses a recovery scan resumes. */
export const ACTIVE_SAGA_STATUSES: readonly SagaStatus[] = ['running', 'compensating'];

/** An error as stored: enough to tell what happened, without the stack. */
export interface RecordedError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
}

/** One entry of the step log: a step whose do completed, and how its compensation went. */
export interface CompletedStep {
  readonly name: string;
  /** What its do returned (JSON), handed to its undo. */
  readonly result: unknown;
  readonly completedAt: number;
  /** True for a step whose do failed but may have acted (undoOnFailure): logged so that it is undone too. */
  readonly doFailed?: boolean;
  /** Set once compensated: by its undo, or by an operator who resolved it by hand. */
  readonly undone?: { readonly at: number; readonly by: 'undo' | 'operator'; readonly note?: string };
}

export interface FailedUndo {
  readonly step: string;
  readonly error: RecordedError;
  readonly attempts: number;
}

/** A saga instance as stored: one document, replaced as a whole under optimistic concurrency. */
export interface SagaRecord {
  readonly sagaId: string;
  readonly definition: string;
  readonly input: unknown;
  readonly status: SagaStatus;
  /** Completed steps, in the order they completed: the information compensation needs. */
  readonly steps: readonly CompletedStep[];
  /** The do step whose failure started compensation. */
  readonly failure?: { readonly step: string; readonly error: RecordedError; readonly attempts: number };
  /** While needs-operator: the undo calls that gave up. */
  readonly failedUndos?: readonly FailedUndo[];
  /** Starts at 1; every update adds 1. */
  readonly version: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ListSagasQuery {
  /** Default: every status. */
  readonly statuses?: readonly SagaStatus[];
  /** Page size; default 100. */
  readonly limit?: number;
  /** Sagas whose id sorts after this one (the last id of the previous page). */
  readonly after?: string;
}

/** The saga store port: one document per saga, written with compare-and-set on its version. */
export interface SagaStore {
  readonly kind: string;
  /** Stores a new saga (version 1); false when a saga with that id exists already (nothing is written). */
  insert(record: SagaRecord): Promise<boolean>;
  get(sagaId: string): Promise<SagaRecord | undefined>;
  /**
   * Replaces the saga's record with `record` (whose version must be the stored one plus 1) when the stored
   * version is still `record.version - 1`; false otherwise (someone else wrote first, or no such saga).
   */
  update(record: SagaRecord): Promise<boolean>;
  /** Sagas ordered by id, filtered by status. */
  list(query?: ListSagasQuery): Promise<SagaRecord[]>;
}

const MAX_ID_LENGTH = 200;

export function checkSagaId(sagaId: unknown, option = 'sagaId'): asserts sagaId is string {
  if (typeof sagaId !== 'string' || sagaId.length === 0 || sagaId.length > MAX_ID_LENGTH)
    throw new InvalidOptionsError(option, `expected a string of 1 to ${MAX_ID_LENGTH} characters`);
}

/** Validates a record before any adapter writes it (a new one must have version 1). */
export function checkSagaRecord(record: SagaRecord, isNew = false): void {
  assertObject('record', record as unknown);
  checkSagaId(record.sagaId, 'record.sagaId');
  if (typeof record.definition !== 'string' || record.definition.length === 0)
    throw new InvalidOptionsError('record.definition', 'expected a non-empty string');
  if (!SAGA_STATUSES.includes(record.status))
    throw new InvalidOptionsError('record.status', `expected one of ${SAGA_STATUSES.join(', ')}`);
  if (!Array.isArray(record.steps)) throw new InvalidOptionsError('record.steps', 'expected an array');
  assertInteger('record.version', record.version, isNew ? 1 : 2, isNew ? 1 : Number.MAX_SAFE_INTEGER);
}

/** Validates a list query; returns the page size and statuses to apply. */
export function checkListQuery(query: ListSagasQuery = {}): {
  limit: number;
  statuses: readonly SagaStatus[];
  after: string | undefined;
} {
  assertObject('query', query as unknown);
  const limit = query.limit ?? 100;
  assertInteger('limit', limit, 1, 10_000);
  const statuses = query.statuses ?? SAGA_STATUSES;
  if (!Array.isArray(statuses) || statuses.some((s) => !SAGA_STATUSES.includes(s)))
    throw new InvalidOptionsError('statuses', `expected a list of ${SAGA_STATUSES.join(', ')}`);
  if (query.after !== undefined) checkSagaId(query.after, 'after');
  return { limit, statuses, after: query.after };
}

/** A deep copy through JSON: what every adapter stores, so the memory adapter behaves as the databases do. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
