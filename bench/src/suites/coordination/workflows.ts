/**
 * The workflow implementations: the Stratus WorkflowEngine on PostgreSQL and on SQLite, and DBOS Transact on
 * PostgreSQL. Each runs the same three-step workflow: steps a, b and c, each a no-op adding 1 to the previous
 * value, so a workflow started with n returns n + 3.
 */
import {
  defineWorkflow,
  PostgresWorkflowStore,
  SqliteWorkflowStore,
  WorkflowEngine,
} from '@stratus/coordination';
import { openSqlite } from '@stratus/sql';
import pg from 'pg';

export interface WorkflowImplementation {
  readonly impl: string;
  readonly backend: 'postgres' | 'sqlite';
  /** What the results file says about it. */
  readonly description: Record<string, unknown>;
  /** Runs one workflow from start to result. */
  run(input: number): Promise<unknown>;
  /** Untimed, after each measurement (vacuums a PostgreSQL database). */
  afterEach(): Promise<void>;
  close(): Promise<void>;
}

/** Where an implementation keeps its data: a PostgreSQL database or a SQLite file of its own. */
export type WorkflowTarget =
  | { readonly postgresUrl: string; readonly vacuum: () => Promise<void> }
  | { readonly sqlitePath: string };

/** Connections of every PostgreSQL pool here: pg's default, DBOS's default system database pool size. */
export const POOL_SIZE = 10;

const benchWorkflow = defineWorkflow<number, number>({
  name: 'bench-three-steps',
  steps: [
    { name: 'a', run: ({ input }) => input + 1 },
    { name: 'b', run: ({ results }) => (results.a as number) + 1 },
    { name: 'c', run: ({ results }) => (results.b as number) + 1 },
  ],
});

export async function openStratusWorkflows(target: WorkflowTarget): Promise<WorkflowImplementation> {
  if ('postgresUrl' in target) {
    const pool = new pg.Pool({ connectionString: target.postgresUrl, max: POOL_SIZE });
    pool.on('error', () => {});
    const store = new PostgresWorkflowStore({ pool });
    await store.migrate();
    return stratus('stratus-postgres', 'postgres', store, {
      store: `PostgresWorkflowStore on a pg Pool of ${POOL_SIZE}`,
      afterEach: target.vacuum,
      close: async () => {
        await store.close();
        await pool.end();
      },
    });
  }
  const database = openSqlite(target.sqlitePath);
  const store = new SqliteWorkflowStore({ database });
  return stratus('stratus-sqlite', 'sqlite', store, {
    store:
      'SqliteWorkflowStore on openSqlite defaults (WAL, synchronous NORMAL, checkpoints in a background thread)',
    afterEach: async () => {},
    close: async () => {
      await store.close();
      database.close();
    },
  });
}

function stratus(
  impl: string,
  backend: 'postgres' | 'sqlite',
  store: PostgresWorkflowStore | SqliteWorkflowStore,
  options: { store: string; afterEach: () => Promise<void>; close: () => Promise<void> },
): WorkflowImplementation {
  const engine = new WorkflowEngine({ store, name: 'bench' });
  engine.register(benchWorkflow).launch();
  return {
    impl,
    backend,
    description: {
      engine:
        'WorkflowEngine defaults (concurrency 256, claim batch 64); no Supervisor (the happy path needs none)',
      store: options.store,
      durability: 'each step transition is one committed write; a workflow is 4 writes',
    },
    async run(input) {
      const handle = await engine.start(benchWorkflow, input);
      return handle.result();
    },
    afterEach: options.afterEach,
    async close() {
      await engine.close();
      await options.close();
    },
  };
}

// DBOS keeps its registry and executor in the process: one launch per process, the workflow registered once,
// before the launch.
let dbosModule: Promise<typeof import('@dbos-inc/dbos-sdk')> | undefined;
let dbosWorkflow: ((input: number) => Promise<number>) | undefined;
let dbosLaunched = false;

export async function openDbosWorkflows(
  postgresUrl: string,
  vacuum: () => Promise<void>,
): Promise<WorkflowImplementation> {
  if (dbosLaunched) throw new Error('DBOS is already launched in this process');
  dbosModule ??= import('@dbos-inc/dbos-sdk');
  const { DBOS } = await dbosModule;
  dbosWorkflow ??= DBOS.registerWorkflow(
    async (input: number) => {
      const a = await DBOS.runStep(async () => input + 1, { name: 'a' });
      const b = await DBOS.runStep(async () => a + 1, { name: 'b' });
      return DBOS.runStep(async () => b + 1, { name: 'c' });
    },
    { name: 'benchThreeSteps' },
  );
  const workflow = dbosWorkflow;
  DBOS.setConfig({
    name: 'stratus-bench',
    systemDatabaseUrl: postgresUrl,
    systemDatabasePoolSize: POOL_SIZE,
    logLevel: 'warn',
  });
  await DBOS.launch();
  dbosLaunched = true;
  return {
    impl: 'dbos',
    backend: 'postgres',
    description: {
      version: '@dbos-inc/dbos-sdk 5.3.0',
      api: 'DBOS.registerWorkflow of three DBOS.runStep calls; DBOS.startWorkflow(workflow)(n), then getResult()',
      config: `its defaults, with the run's database as system database and a pool of ${POOL_SIZE} (its default)`,
    },
    async run(input) {
      const handle = await DBOS.startWorkflow(workflow)(input);
      return handle.getResult();
    },
    afterEach: vacuum,
    async close() {
      await DBOS.shutdown();
      dbosLaunched = false;
    },
  };
}
