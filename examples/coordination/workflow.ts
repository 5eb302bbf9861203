// Scheduler Agent Supervisor: a durable workflow as code. The engine (the Scheduler) runs each step and records
// its outcome in the state store, so a workflow survives restarts: steps in process or on remote agents over a
// queue, durable sleeps, waits for an external signal with a deadline. A leader-elected Supervisor retries
// failed or overdue steps with backoff, and fails the workflow with an alert past a step's failure threshold.
// Prints:
//   charge failed (payment service unavailable), the supervisor retries it
//   charge completed on try 2
//   waiting for approved
//   shipped order o-1 (charged c-1, approved by ada)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  defineWorkflow,
  SqliteLeaseStore,
  SqliteWorkflowStore,
  WorkflowEngine,
  WorkflowSupervisor,
} from '@stratus/coordination';
import { constantBackoff } from '@stratus/core';
import { openSqlite } from '@stratus/sql';

const fulfilment = defineWorkflow<{ orderId: string }, string>({
  name: 'fulfilment',
  stepTimeoutMs: 30_000, // Complete By of each try; past it the result is refused and the step retried
  maxFailures: 3, // then the workflow fails and the supervisor raises its alert
  steps: [
    {
      name: 'charge',
      run: ({ failures, idempotencyKey }) => {
        // idempotencyKey (`<workflowId>:charge`) lets the payment service charge once however often it is tried.
        if (failures === 0) throw new Error('payment service unavailable');
        console.log(`charge completed on try ${failures + 1}`);
        return { chargeId: 'c-1', key: idempotencyKey };
      },
    },
    { name: 'cool-off', sleepMs: 50 }, // a durable timer: its wake time is stored
    { name: 'approval', waitFor: 'approved', waitMs: 60_000 }, // fails (or onTimeout: { goto }) after waitMs
    {
      name: 'ship',
      run: ({ input, results }) => {
        const { chargeId } = results.charge as { chargeId: string };
        const { by } = results.approval as { by: string };
        return `shipped order ${input.orderId} (charged ${chargeId}, approved by ${by})`;
      },
    },
  ],
});

const dir = mkdtempSync(join(tmpdir(), 'stratus-workflow-'));
const database = openSqlite(join(dir, 'workflows.db'));
const store = new SqliteWorkflowStore({ database });
const engine = new WorkflowEngine({ store }).register(fulfilment);
const supervisor = new WorkflowSupervisor({
  store,
  leases: new SqliteLeaseStore({ database }), // supervisors in many processes elect one leader
  engine,
  backoff: constantBackoff(50), // wait before retrying a failed step
}).start();
engine.events.on((event) => {
  if (event.type === 'step-failed')
    console.log(`${event.step} failed (${(event.error as Error).message}), the supervisor retries it`);
  if (event.type === 'step-waiting' && event.signal !== null) {
    console.log(`waiting for ${event.signal}`);
    void engine.signal(event.workflowId, event.signal, { by: 'ada' }); // from anywhere: an HTTP handler, say
  }
});

const run = await engine.start(fulfilment, { orderId: 'o-1' }, { id: 'order-o-1' }); // the same id: the same run
console.log(await run.result());

await supervisor.stop();
await engine.close();
database.close();
rmSync(dir, { recursive: true, force: true });
