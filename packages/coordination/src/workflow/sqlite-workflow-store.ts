import { InvalidOptionsError, type Unsubscribe } from '@stratus/core';
import { fileKey, migrateSqlite, SQLITE_LIMIT, type SqliteDatabase, WatchHub } from '@stratus/sql';
import { recoveryCandidate } from './memory-workflow-store.js';
import {
  type ClaimedStep,
  type ClaimRequest,
  initialState,
  type Recovery,
  type RecoveryCandidate,
  type StateRecord,
  type Submission,
  type SubmitResult,
  type Transition,
  transitioned,
  type WorkflowRecord,
  type WorkflowRun,
  type WorkflowStore,
} from './workflow-store.js';

const MIGRATIONS = [
  `CREATE TABLE wf_runs (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     version INTEGER NOT NULL,
     input TEXT NOT NULL,
     status TEXT NOT NULL,
     result TEXT,
     error TEXT,
     created_at REAL NOT NULL,
     finished_at REAL
   );
   CREATE TABLE wf_state (
     workflow_id TEXT PRIMARY KEY,
     definition TEXT NOT NULL,
     step INTEGER NOT NULL,
     step_name TEXT NOT NULL,
     status TEXT NOT NULL,
     locked_by TEXT,
     complete_by REAL,
     failure_count INTEGER NOT NULL,
     max_failures INTEGER NOT NULL,
     attempt INTEGER NOT NULL,
     timeout_ms REAL NOT NULL,
     available_at REAL NOT NULL,
     wait_until REAL,
     waiting_for TEXT,
     results TEXT NOT NULL,
     last_error TEXT,
     created_at REAL NOT NULL,
     updated_at REAL NOT NULL
   );
   CREATE INDEX wf_state_pending ON wf_state (available_at) WHERE status = 'pending';
   CREATE INDEX wf_state_processing ON wf_state (complete_by) WHERE status = 'processing';
   CREATE INDEX wf_state_error ON wf_state (updated_at) WHERE status = 'error';
   CREATE TABLE wf_signals (
     workflow_id TEXT NOT NULL,
     name TEXT NOT NULL,
     payload TEXT NOT NULL,
     PRIMARY KEY (workflow_id, name)
   ) WITHOUT ROWID;
   CREATE TABLE wf_wakeups (id INTEGER PRIMARY KEY CHECK (id = 1), counter INTEGER NOT NULL);
   INSERT INTO wf_wakeups (id, counter) VALUES (1, 0);`,
];

export interface StateRow {
  workflow_id: string;
  definition: string;
  step: number;
  step_name: string;
  status: StateRecord['status'];
  locked_by: string | null;
  complete_by: number | null;
  failure_count: number;
  max_failures: number;
  attempt: number;
  timeout_ms: number;
  available_at: number;
  wait_until: number | null;
  waiting_for: string | null;
  results: string;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface RunRow {
  id: string;
  name: string;
  version: number;
  input: string;
  status: WorkflowRun['status'];
  result: string | null;
  error: string | null;
  created_at: number;
  finished_at: number | null;
}

export const stateFromRow = (row: StateRow): StateRecord => ({
  workflowId: row.workflow_id,
  definition: row.definition,
  step: Number(row.step),
  stepName: row.step_name,
  status: row.status,
  lockedBy: row.locked_by,
  completeBy: row.complete_by === null ? null : Number(row.complete_by),
  failureCount: Number(row.failure_count),
  maxFailures: Number(row.max_failures),
  attempt: Number(row.attempt),
  timeoutMs: Number(row.timeout_ms),
  availableAt: Number(row.available_at),
  waitUntil: row.wait_until === null ? null : Number(row.wait_until),
  waitingFor: row.waiting_for,
  results: row.results,
  lastError: row.last_error,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export const runFromRow = (row: RunRow): WorkflowRun => ({
  workflowId: row.id,
  name: row.name,
  version: Number(row.version),
  input: row.input,
  status: row.status,
  result: row.result,
  error: row.error,
  createdAt: Number(row.created_at),
  finishedAt: row.finished_at === null ? null : Number(row.finished_at),
});

const STATE_COLUMNS =
  'definition = ?, step = ?, step_name = ?, status = ?, locked_by = ?, complete_by = ?, failure_count = ?, ' +
  'max_failures = ?, attempt = ?, timeout_ms = ?, available_at = ?, wait_until = ?, waiting_for = ?, results = ?, ' +
  'last_error = ?, updated_at = ?';
const stateValues = (s: StateRecord) =>
  [
    s.definition,
    s.step,
    s.stepName,
    s.status,
    s.lockedBy,
    s.completeBy,
    s.failureCount,
    s.maxFailures,
    s.attempt,
    s.timeoutMs,
    s.availableAt,
    s.waitUntil,
    s.waitingFor,
    s.results,
    s.lastError,
    s.updatedAt,
  ] as const;

export interface SqliteWorkflowStoreOptions {
  readonly database: SqliteDatabase;
  /** How often other processes' writes are looked for (a read of PRAGMA data_version); default 5 ms. */
  readonly watchIntervalMs?: number;
}

/**
 * Workflows in a SQLite file (the embedded default), shared by every process that opens it. Each operation is one
 * write transaction (BEGIN IMMEDIATE), so a claim is exclusive: no two Schedulers take the same step. Wake-ups: at
 * once in this process, within `watchIntervalMs` in others.
 */
export class SqliteWorkflowStore implements WorkflowStore {
  readonly kind = 'sqlite';
  readonly database: SqliteDatabase;
  readonly #hub: WatchHub;

  constructor(options: SqliteWorkflowStoreOptions) {
    const database = options?.database;
    if (typeof (database as Partial<SqliteDatabase>)?.transactionAsync !== 'function') {
      throw new InvalidOptionsError('database', 'expected a SqliteDatabase (see openSqlite)');
    }
    const watchIntervalMs = options.watchIntervalMs ?? 5;
    if (typeof watchIntervalMs !== 'number' || !(watchIntervalMs > 0)) {
      throw new InvalidOptionsError('watchIntervalMs', 'expected a positive number of ms');
    }
    this.database = database;
    migrateSqlite(database, 'workflows', MIGRATIONS);
    const counter = database.prepare('SELECT counter FROM wf_wakeups WHERE id = 1');
    this.#hub = new WatchHub(
      fileKey(database.path),
      database,
      () => String(counter.get<{ counter: number }>()?.counter),
      watchIntervalMs,
    );
  }

  async submit(submission: Submission): Promise<SubmitResult> {
    const db = this.database;
    const state = initialState(submission);
    const result = await db.transactionAsync((): SubmitResult => {
      const inserted = db
        .prepare(
          'INSERT INTO wf_runs (id, name, version, input, status, created_at) VALUES (?, ?, ?, ?, ?, ?) ' +
            'ON CONFLICT (id) DO NOTHING',
        )
        .run(
          submission.workflowId,
          submission.name,
          submission.version,
          submission.input,
          'running',
          submission.now,
        );
      if (inserted.changes === 0) {
        const row = db
          .prepare('SELECT * FROM wf_runs WHERE id = ?')
          .get<RunRow>(submission.workflowId) as RunRow;
        return { created: false, existing: runFromRow(row) };
      }
      db.prepare(
        `INSERT INTO wf_state (workflow_id, created_at, definition, step, step_name, status, locked_by, complete_by,
           failure_count, max_failures, attempt, timeout_ms, available_at, wait_until, waiting_for, results,
           last_error, updated_at) VALUES (?, ?, ${'?, '.repeat(15)}?)`,
      ).run(state.workflowId, state.createdAt, ...stateValues(state));
      if (submission.claimBy === undefined) this.#bump();
      return { created: true };
    });
    return result;
  }

  async claim(request: ClaimRequest): Promise<ClaimedStep[]> {
    const { schedulerId, definitions, limit, now } = request;
    const db = this.database;
    return db.transactionAsync(() => {
      const rows = db
        .prepare(
          `UPDATE wf_state SET status = 'processing', locked_by = ?, complete_by = ? + timeout_ms,
             attempt = attempt + 1, updated_at = ?
           WHERE workflow_id IN (
             SELECT workflow_id FROM wf_state
             WHERE status = 'pending' AND available_at <= ? AND definition IN (SELECT value FROM json_each(?))
             ORDER BY available_at ${SQLITE_LIMIT})
           RETURNING *`,
        )
        .all<StateRow>(schedulerId, now, now, now, JSON.stringify(definitions), limit);
      if (rows.length === 0) return [];
      const inputs = new Map(
        db
          .prepare('SELECT id, input FROM wf_runs WHERE id IN (SELECT value FROM json_each(?))')
          .all<{ id: string; input: string }>(JSON.stringify(rows.map((row) => row.workflow_id)))
          .map((row) => [row.id, row.input]),
      );
      return rows.map((row) => ({ ...stateFromRow(row), input: inputs.get(row.workflow_id) as string }));
    });
  }

  async transition(transition: Transition): Promise<boolean> {
    const { workflowId, attempt, now, to } = transition;
    const db = this.database;
    return db.transactionAsync(() => {
      const row = db.prepare('SELECT * FROM wf_state WHERE workflow_id = ?').get<StateRow>(workflowId);
      if (row === undefined) return false;
      const state = stateFromRow(row);
      if (state.status !== 'processing' || state.attempt !== attempt || (state.completeBy ?? 0) < now)
        return false;
      let next = transitioned(state, transition);
      if (
        to.kind === 'park' &&
        to.waitingFor !== null &&
        db
          .prepare('SELECT 1 AS found FROM wf_signals WHERE workflow_id = ? AND name = ?')
          .get(workflowId, to.waitingFor)
      ) {
        next = { ...next, availableAt: now };
      }
      db.prepare(`UPDATE wf_state SET ${STATE_COLUMNS} WHERE workflow_id = ?`).run(
        ...stateValues(next),
        workflowId,
      );
      if (to.kind === 'completed') {
        db.prepare("UPDATE wf_runs SET status = 'completed', result = ?, finished_at = ? WHERE id = ?").run(
          to.result,
          now,
          workflowId,
        );
      } else if (to.kind === 'failed') {
        db.prepare("UPDATE wf_runs SET status = 'failed', error = ?, finished_at = ? WHERE id = ?").run(
          to.error,
          now,
          workflowId,
        );
      } else if (next.status === 'pending') {
        this.#bump();
      }
      return true;
    });
  }

  async dueForRecovery(now: number, limit: number): Promise<RecoveryCandidate[]> {
    const rows = this.database
      .prepare(
        `SELECT * FROM (
           SELECT * FROM wf_state WHERE status = 'processing' AND complete_by < ? ${SQLITE_LIMIT})
         UNION ALL
         SELECT * FROM (
           SELECT s.* FROM wf_state s JOIN wf_runs r ON r.id = s.workflow_id
           WHERE s.status = 'error' AND r.status = 'running' ${SQLITE_LIMIT})`,
      )
      .all<StateRow>(now, limit, limit);
    return rows.slice(0, limit).map((row) => recoveryCandidate(stateFromRow(row)));
  }

  async recover(recovery: Recovery): Promise<boolean> {
    const { workflowId, status, attempt, failureCount, now, to } = recovery;
    const db = this.database;
    return db.transactionAsync(() => {
      const moved =
        to.kind === 'retry'
          ? db
              .prepare(
                `UPDATE wf_state SET status = 'pending', locked_by = NULL, complete_by = NULL,
                   failure_count = failure_count + 1, available_at = ?, last_error = ?, updated_at = ?
                 WHERE workflow_id = ? AND status = ? AND attempt = ? AND failure_count = ?
                   AND EXISTS (SELECT 1 FROM wf_runs WHERE id = ? AND status = 'running')`,
              )
              .run(to.availableAt, to.error, now, workflowId, status, attempt, failureCount, workflowId)
          : db
              .prepare(
                `UPDATE wf_state SET status = 'error', locked_by = NULL, complete_by = NULL,
                   failure_count = failure_count + 1, last_error = ?, updated_at = ?
                 WHERE workflow_id = ? AND status = ? AND attempt = ? AND failure_count = ?
                   AND EXISTS (SELECT 1 FROM wf_runs WHERE id = ? AND status = 'running')`,
              )
              .run(to.error, now, workflowId, status, attempt, failureCount, workflowId);
      if (moved.changes === 0) return false;
      if (to.kind === 'failed') {
        db.prepare("UPDATE wf_runs SET status = 'failed', error = ?, finished_at = ? WHERE id = ?").run(
          to.context,
          now,
          workflowId,
        );
      } else {
        this.#bump();
      }
      return true;
    });
  }

  async signal(workflowId: string, name: string, payload: string, now: number): Promise<boolean> {
    const db = this.database;
    return db.transactionAsync(() => {
      const inserted = db
        .prepare(
          'INSERT INTO wf_signals (workflow_id, name, payload) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
        )
        .run(workflowId, name, payload);
      if (inserted.changes === 0) return false;
      const woken = db
        .prepare(
          `UPDATE wf_state SET available_at = min(available_at, ?), updated_at = ?
           WHERE workflow_id = ? AND status = 'pending' AND waiting_for = ?`,
        )
        .run(now, now, workflowId, name);
      if (woken.changes > 0) this.#bump();
      return true;
    });
  }

  async readSignal(workflowId: string, name: string): Promise<string | undefined> {
    return this.database
      .prepare('SELECT payload FROM wf_signals WHERE workflow_id = ? AND name = ?')
      .get<{ payload: string }>(workflowId, name)?.payload;
  }

  async get(workflowId: string): Promise<WorkflowRecord | undefined> {
    const run = this.database.prepare('SELECT * FROM wf_runs WHERE id = ?').get<RunRow>(workflowId);
    const state = this.database
      .prepare('SELECT * FROM wf_state WHERE workflow_id = ?')
      .get<StateRow>(workflowId);
    return run === undefined || state === undefined
      ? undefined
      : { run: runFromRow(run), state: stateFromRow(state) };
  }

  async nextAvailableAt(definitions: readonly string[]): Promise<number | undefined> {
    const row = this.database
      .prepare(
        `SELECT min(available_at) AS next FROM wf_state
         WHERE status = 'pending' AND definition IN (SELECT value FROM json_each(?))`,
      )
      .get<{ next: number | null }>(JSON.stringify(definitions));
    return row?.next === null || row?.next === undefined ? undefined : Number(row.next);
  }

  watch(listener: () => void): Unsubscribe {
    return this.#hub.watch('ready', listener);
  }

  async close(): Promise<void> {
    this.#hub.close();
  }

  /** Inside a write: other processes see the counter move; this process's watchers are woken after the commit. */
  #bump(): void {
    this.database.prepare('UPDATE wf_wakeups SET counter = counter + 1 WHERE id = 1').run();
    this.database.afterCommit(() => this.#hub.notify('ready'));
  }
}
