import type { Unsubscribe } from '@stratus/core';
import type { Pool, QueryResult, QueryResultRow } from 'pg';

type ClaimRow = Parameters<typeof stateFromRow>[0] & { input: string };

import {
  NotificationListener,
  PostgresComponent,
  type PostgresComponentOptions,
  postgresTypes,
} from '@stratus/sql';
import { recoveryCandidate } from './memory-workflow-store.js';
import { runFromRow, stateFromRow } from './sqlite-workflow-store.js';
import {
  type ClaimedStep,
  type ClaimRequest,
  initialState,
  type Recovery,
  type RecoveryCandidate,
  type Submission,
  type SubmitResult,
  type Transition,
  type WorkflowRecord,
  type WorkflowStore,
} from './workflow-store.js';

export type PostgresWorkflowStoreOptions = PostgresComponentOptions;

const migrations = (s: string) => [
  `CREATE TABLE "${s}".wf_runs (
     id text PRIMARY KEY,
     name text NOT NULL,
     version int NOT NULL,
     input text NOT NULL,
     status text NOT NULL,
     result text,
     error text,
     created_at double precision NOT NULL,
     finished_at double precision
   );
   CREATE TABLE "${s}".wf_state (
     workflow_id text PRIMARY KEY,
     definition text NOT NULL,
     step int NOT NULL,
     step_name text NOT NULL,
     status text NOT NULL,
     locked_by text,
     complete_by double precision,
     failure_count int NOT NULL,
     max_failures int NOT NULL,
     attempt int NOT NULL,
     timeout_ms double precision NOT NULL,
     available_at double precision NOT NULL,
     wait_until double precision,
     waiting_for text,
     results text NOT NULL,
     last_error text,
     created_at double precision NOT NULL,
     updated_at double precision NOT NULL
   );
   CREATE INDEX wf_state_pending ON "${s}".wf_state (available_at) WHERE status = 'pending';
   CREATE INDEX wf_state_processing ON "${s}".wf_state (complete_by) WHERE status = 'processing';
   CREATE INDEX wf_state_error ON "${s}".wf_state (updated_at) WHERE status = 'error';
   CREATE TABLE "${s}".wf_signals (
     workflow_id text NOT NULL,
     name text NOT NULL,
     payload text NOT NULL,
     PRIMARY KEY (workflow_id, name)
   );`,
];

/** The compare-and-set every write after a claim makes: still processing under this attempt, and in time. */
const CLAIM_HELD = "workflow_id = $1 AND status = 'processing' AND attempt = $2 AND complete_by >= $3";

/**
 * Workflows in PostgreSQL, for Schedulers and Supervisors on many hosts. Every operation is one statement (one
 * round trip): submission inserts the workflow and its state record in one statement, claims take pending steps
 * with FOR UPDATE SKIP LOCKED, and writes that leave a step pending NOTIFY the Schedulers listening.
 */
export class PostgresWorkflowStore implements WorkflowStore {
  readonly kind = 'postgres';
  readonly pool: Pool;
  readonly schema: string;
  readonly channel: string;
  readonly #listener: NotificationListener;
  readonly #component: PostgresComponent;

  constructor(options: PostgresWorkflowStoreOptions) {
    this.#component = new PostgresComponent('workflows', options, migrations);
    const { pool, schema } = this.#component;
    this.pool = pool;
    this.schema = schema;
    this.channel = `${schema}_workflows`;
    this.#listener = new NotificationListener(() => pool.connect(), this.channel);
  }

  /** Creates the tables if needed (done on first use). */
  migrate(): Promise<void> {
    return this.#component.migrate();
  }

  get #t() {
    return `"${this.schema}"`;
  }

  async submit(submission: Submission): Promise<SubmitResult> {
    await this.migrate();
    const s = initialState(submission);
    const t = this.#t;
    const { rows } = await this.#query<{ created: number }>(
      'submit',
      `WITH run AS (
         INSERT INTO ${t}.wf_runs (id, name, version, input, status, created_at)
         VALUES ($1, $2, $3, $4, 'running', $5) ON CONFLICT (id) DO NOTHING RETURNING id),
       st AS (
         INSERT INTO ${t}.wf_state (workflow_id, definition, step, step_name, status, locked_by, complete_by,
           failure_count, max_failures, attempt, timeout_ms, available_at, wait_until, waiting_for, results,
           last_error, created_at, updated_at)
         SELECT id, $6, 0, $7, $8, $9, $10, 0, $11, $12, $13, $5, NULL, NULL, '{}', NULL, $5, $5 FROM run
         RETURNING workflow_id)
       SELECT (SELECT count(*) FROM st)::int AS created,
              (SELECT count(*) FROM (SELECT pg_notify($14, 'ready') FROM st WHERE $8 = 'pending') n) AS notified`,
      [
        s.workflowId,
        submission.name,
        submission.version,
        submission.input,
        submission.now,
        s.definition,
        s.stepName,
        s.status,
        s.lockedBy,
        s.completeBy,
        s.maxFailures,
        s.attempt,
        s.timeoutMs,
        this.channel,
      ],
    );
    if (rows[0]?.created === 1) return { created: true };
    const existing = await this.pool.query({
      text: `SELECT * FROM ${t}.wf_runs WHERE id = $1`,
      values: [s.workflowId],
      types: postgresTypes,
    });
    return { created: false, existing: runFromRow(existing.rows[0]) };
  }

  async claim(request: ClaimRequest): Promise<ClaimedStep[]> {
    await this.migrate();
    const { schedulerId, definitions, limit, now } = request;
    const t = this.#t;
    const { rows } = await this.#query<ClaimRow>(
      'claim',
      `WITH c AS (
         SELECT workflow_id FROM ${t}.wf_state
         WHERE status = 'pending' AND available_at <= $2 AND definition = ANY($3::text[])
         ORDER BY available_at LIMIT $4 FOR UPDATE SKIP LOCKED),
       u AS (
         UPDATE ${t}.wf_state st SET status = 'processing', locked_by = $1, complete_by = $2 + st.timeout_ms,
           attempt = st.attempt + 1, updated_at = $2
         FROM c WHERE st.workflow_id = c.workflow_id RETURNING st.*)
       SELECT u.*, r.input FROM u JOIN ${t}.wf_runs r ON r.id = u.workflow_id`,
      [schedulerId, now, definitions, limit],
    );
    return rows.map((row) => ({ ...stateFromRow(row), input: row.input }));
  }

  async transition(transition: Transition): Promise<boolean> {
    await this.migrate();
    const { workflowId, attempt, now, results, to } = transition;
    const t = this.#t;
    const notify = (from: string) =>
      `(SELECT count(*) FROM (SELECT pg_notify('${this.channel}', 'ready') FROM ${from}) n) AS notified`;
    let sql: string;
    let params: unknown[];
    switch (to.kind) {
      case 'step': {
        const claimed = to.claimBy !== undefined;
        sql = `WITH u AS (
                 UPDATE ${t}.wf_state SET step = $4, step_name = $5, status = $6, locked_by = $7,
                   complete_by = $8, failure_count = 0, max_failures = $9, attempt = attempt + $10,
                   timeout_ms = $11, available_at = $12, wait_until = NULL, waiting_for = NULL, results = $13,
                   last_error = NULL, updated_at = $3
                 WHERE ${CLAIM_HELD} RETURNING 1)
               SELECT (SELECT count(*) FROM u)::int AS changed${claimed ? '' : `, ${notify('u')}`}`;
        params = [
          workflowId,
          attempt,
          now,
          to.step,
          to.stepName,
          claimed ? 'processing' : 'pending',
          to.claimBy ?? null,
          claimed ? now + to.timeoutMs : null,
          to.maxFailures,
          claimed ? 1 : 0,
          to.timeoutMs,
          to.availableAt,
          results,
        ];
        break;
      }
      case 'park':
        sql = `WITH u AS (
                 UPDATE ${t}.wf_state SET status = 'pending', locked_by = NULL, complete_by = NULL,
                   available_at = CASE WHEN $6::text IS NOT NULL AND EXISTS (
                     SELECT 1 FROM ${t}.wf_signals WHERE workflow_id = $1 AND name = $6) THEN $3 ELSE $4 END,
                   wait_until = $5, waiting_for = $6, updated_at = $3
                 WHERE ${CLAIM_HELD} RETURNING 1)
               SELECT (SELECT count(*) FROM u)::int AS changed, ${notify('u')}`;
        params = [workflowId, attempt, now, to.availableAt, to.waitUntil, to.waitingFor];
        break;
      case 'completed':
        sql = `WITH u AS (
                 UPDATE ${t}.wf_state SET status = 'processed', locked_by = NULL, complete_by = NULL,
                   results = $4, updated_at = $3
                 WHERE ${CLAIM_HELD} RETURNING workflow_id),
               r AS (
                 UPDATE ${t}.wf_runs SET status = 'completed', result = $5, finished_at = $3
                 WHERE id IN (SELECT workflow_id FROM u) RETURNING 1)
               SELECT (SELECT count(*) FROM u)::int AS changed`;
        params = [workflowId, attempt, now, results, to.result];
        break;
      case 'error':
      case 'failed': {
        const failed = to.kind === 'failed';
        sql = `WITH u AS (
                 UPDATE ${t}.wf_state SET status = 'error', locked_by = NULL, complete_by = NULL,
                   failure_count = failure_count + $6, results = $4, last_error = $5, updated_at = $3
                 WHERE ${CLAIM_HELD} RETURNING workflow_id),
               r AS (
                 UPDATE ${t}.wf_runs SET status = 'failed', error = $5, finished_at = $3
                 WHERE $6 = 1 AND id IN (SELECT workflow_id FROM u) RETURNING 1)
               SELECT (SELECT count(*) FROM u)::int AS changed`;
        params = [workflowId, attempt, now, results, to.error, failed ? 1 : 0];
        break;
      }
    }
    const { rows } = await this.#query<{ changed: number }>(
      `transition-${to.kind}-${String(to.kind === 'step' && to.claimBy !== undefined)}`,
      sql,
      params,
    );
    return rows[0]?.changed === 1;
  }

  async dueForRecovery(now: number, limit: number): Promise<RecoveryCandidate[]> {
    await this.migrate();
    const t = this.#t;
    const { rows } = await this.pool.query({
      text: `(SELECT * FROM ${t}.wf_state WHERE status = 'processing' AND complete_by < $1 LIMIT $2)
       UNION ALL
       (SELECT s.* FROM ${t}.wf_state s JOIN ${t}.wf_runs r ON r.id = s.workflow_id
        WHERE s.status = 'error' AND r.status = 'running' LIMIT $2)`,
      values: [now, limit],
      types: postgresTypes,
    });
    return rows.slice(0, limit).map((row) => recoveryCandidate(stateFromRow(row)));
  }

  async recover(recovery: Recovery): Promise<boolean> {
    await this.migrate();
    const { workflowId, status, attempt, failureCount, now, to } = recovery;
    const t = this.#t;
    const seen = `workflow_id = $1 AND status = $2 AND attempt = $3 AND failure_count = $4
      AND EXISTS (SELECT 1 FROM ${t}.wf_runs WHERE id = $1 AND status = 'running')`;
    const { rows } = await this.pool.query<{ changed: number }>({
      text:
        to.kind === 'retry'
          ? `WITH u AS (
             UPDATE ${t}.wf_state SET status = 'pending', locked_by = NULL, complete_by = NULL,
               failure_count = failure_count + 1, available_at = $6, last_error = $7, updated_at = $5
             WHERE ${seen} RETURNING 1)
           SELECT (SELECT count(*) FROM u)::int AS changed,
             (SELECT count(*) FROM (SELECT pg_notify($8, 'ready') FROM u) n) AS notified`
          : `WITH u AS (
             UPDATE ${t}.wf_state SET status = 'error', locked_by = NULL, complete_by = NULL,
               failure_count = failure_count + 1, last_error = $6, updated_at = $5
             WHERE ${seen} RETURNING workflow_id),
           r AS (
             UPDATE ${t}.wf_runs SET status = 'failed', error = $7, finished_at = $5
             WHERE id IN (SELECT workflow_id FROM u) RETURNING 1)
           SELECT (SELECT count(*) FROM u)::int AS changed`,
      values:
        to.kind === 'retry'
          ? [workflowId, status, attempt, failureCount, now, to.availableAt, to.error, this.channel]
          : [workflowId, status, attempt, failureCount, now, to.error, to.context],
      types: postgresTypes,
    });
    return rows[0]?.changed === 1;
  }

  async signal(workflowId: string, name: string, payload: string, now: number): Promise<boolean> {
    await this.migrate();
    const t = this.#t;
    const { rows } = await this.pool.query<{ inserted: number }>({
      text: `WITH ins AS (
         INSERT INTO ${t}.wf_signals (workflow_id, name, payload) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING RETURNING 1),
       u AS (
         UPDATE ${t}.wf_state SET available_at = least(available_at, $4), updated_at = $4
         WHERE workflow_id = $1 AND status = 'pending' AND waiting_for = $2 AND EXISTS (SELECT 1 FROM ins)
         RETURNING 1)
       SELECT (SELECT count(*) FROM ins)::int AS inserted,
         (SELECT count(*) FROM (SELECT pg_notify($5, 'ready') FROM u) n) AS notified`,
      values: [workflowId, name, payload, now, this.channel],
      types: postgresTypes,
    });
    return rows[0]?.inserted === 1;
  }

  async readSignal(workflowId: string, name: string): Promise<string | undefined> {
    await this.migrate();
    const { rows } = await this.pool.query<{ payload: string }>({
      text: `SELECT payload FROM ${this.#t}.wf_signals WHERE workflow_id = $1 AND name = $2`,
      values: [workflowId, name],
      types: postgresTypes,
    });
    return rows[0]?.payload;
  }

  async get(workflowId: string): Promise<WorkflowRecord | undefined> {
    await this.migrate();
    const t = this.#t;
    const { rows } = await this.pool.query({
      text: `SELECT to_jsonb(r) AS run, to_jsonb(s) AS state FROM ${t}.wf_runs r
       JOIN ${t}.wf_state s ON s.workflow_id = r.id WHERE r.id = $1`,
      values: [workflowId],
      types: postgresTypes,
    });
    const row = rows[0];
    return row === undefined ? undefined : { run: runFromRow(row.run), state: stateFromRow(row.state) };
  }

  async nextAvailableAt(definitions: readonly string[]): Promise<number | undefined> {
    await this.migrate();
    const { rows } = await this.pool.query<{ next: number | null }>({
      text: `SELECT min(available_at) AS next FROM ${this.#t}.wf_state
       WHERE status = 'pending' AND definition = ANY($1::text[])`,
      values: [definitions],
      types: postgresTypes,
    });
    const next = rows[0]?.next;
    return next === null || next === undefined ? undefined : Number(next);
  }

  /** A named (prepared once per connection) statement: the hot statements skip parsing and planning. */
  #query<R extends QueryResultRow>(name: string, text: string, values: unknown[]): Promise<QueryResult<R>> {
    return this.pool.query<R>({ name: `wf:${this.schema}:${name}`, text, values, types: postgresTypes });
  }

  watch(listener: () => void): Unsubscribe {
    return this.#listener.watch('ready', listener);
  }

  async close(): Promise<void> {
    await this.#listener.close();
  }
}
