import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { defineWorkflow, type RunStep } from './definition.js';
import { StepDeadlineError, WorkflowFailedError } from './errors.js';
import { engineSetup, settle } from './fixtures/engine-setup.js';
import { MemoryWorkflowStore } from './memory-workflow-store.js';
import { RemoteAgent } from './remote-agent.js';
import { WorkflowEngine } from './workflow-engine.js';

/** An engine whose workflow `slow` has one step `call` of the given run, a 1 s Complete By and no retry. */
function engineWith(run: RunStep<unknown>['run']) {
  const setup = engineSetup();
  setup.engine.register(
    defineWorkflow({ name: 'slow', maxFailures: 1, steps: [{ name: 'call', timeoutMs: 1_000, run }] }),
  );
  const deadlineFailures = () =>
    setup.events.flatMap((e) => (e.type === 'step-failed' && e.reason === 'deadline' ? [e.error] : []));
  return { ...setup, deadlineFailures };
}

function assertDeadline(error: unknown, workflowId: string, step: string, completeBy: number): void {
  assert.ok(error instanceof StepDeadlineError, `expected a StepDeadlineError, got ${String(error)}`);
  assert.equal(error.code, 'ERR_STRATUS_STEP_DEADLINE');
  assert.equal(error.workflowId, workflowId);
  assert.equal(error.step, step);
  assert.equal(error.completeBy, completeBy);
}

describe('Step Complete By', () => {
  it('aborts a running step with a StepDeadlineError that the step, the events and the failure see', async () => {
    const reasons: unknown[] = [];
    const { clock, engine, supervisor, deadlineFailures } = engineWith(
      ({ signal }) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            reasons.push(signal.reason);
            resolve('too late');
          }),
        ),
    );
    const completeBy = clock.now() + 1_000;
    const run = await engine.start('slow', null, { id: 'w-1' });
    await settle(clock, 1_000);
    assert.equal(reasons.length, 1);
    assertDeadline(reasons[0], 'w-1', 'call', completeBy);
    assert.deepEqual(deadlineFailures(), reasons, 'the step-failed event carries the same error');

    // The Supervisor recovers the step once its Complete By has passed and records the typed error's message.
    await settle(clock, 1);
    const failed = assert.rejects(run.result(), WorkflowFailedError);
    assert.equal(await supervisor.sweep(), 1);
    await failed;
    const { failure } = await run.status();
    assert.equal(failure?.reason, 'threshold');
    assert.ok(
      failure?.error.startsWith((reasons[0] as StepDeadlineError).message),
      `recorded: ${failure?.error}`,
    );
    await engine.close();
  });

  it('refuses a result returned after Complete By with a StepDeadlineError', async () => {
    // The wall clock jumps past the deadline while the step runs, before its timer fires.
    let clock: VirtualClock | undefined;
    const setup = engineWith(() => {
      clock?.setWallTime(clock.now() + 5_000);
      return 'done late';
    });
    clock = setup.clock;
    const completeBy = clock.now() + 1_000;
    await setup.engine.start('slow', null, { id: 'w-2' });
    await settle(clock);
    const [error] = setup.deadlineFailures();
    assertDeadline(error, 'w-2', 'call', completeBy);
    assert.equal((await setup.engine.status('w-2')).stepStatus, 'processing', 'left for the Supervisor');
    await setup.engine.close();
  });

  it('gives a step that asks for its signal only after Complete By an aborted one', async () => {
    // The signal is made lazily: one made after the deadline must still say the step is late.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: { aborted: boolean; reason: unknown }[] = [];
    const { clock, engine, deadlineFailures } = engineWith(async (context) => {
      await gate;
      seen.push({ aborted: context.signal.aborted, reason: context.signal.reason });
      return 'done late';
    });
    const completeBy = clock.now() + 1_000;
    await engine.start('slow', null, { id: 'w-3' });
    await settle(clock, 1_000);
    release();
    await waitUntil(() => seen.length === 1, 'the step read its signal');
    assert.equal(seen[0]?.aborted, true);
    assertDeadline(seen[0]?.reason, 'w-3', 'call', completeBy);
    assert.deepEqual(deadlineFailures(), [seen[0]?.reason], 'the step-failed event carries the same error');
    await engine.close();
  });

  it('builds a StepDeadlineError for any deadline, since it is made inside timers', () => {
    assert.match(new StepDeadlineError('w', 's', 0).message, /complete-by \(1970-01-01T00:00:00\.000Z\)/);
    assert.match(new StepDeadlineError('w', 's', Number.NaN).message, /complete-by \(NaN\)/);
  });

  it('aborts a remote agent and the agent step with a StepDeadlineError', async () => {
    const clock = new VirtualClock();
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
    const engine = new WorkflowEngine({ store: new MemoryWorkflowStore(), clock, messaging });
    const failures: unknown[] = [];
    engine.events.on((e) => e.type === 'step-failed' && e.reason === 'deadline' && failures.push(e.error));
    const reasons: unknown[] = [];
    let serving = false;
    const agent = await new RemoteAgent({
      messaging,
      queue: 'payments',
      handler: ({ signal }) => {
        serving = true;
        return new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            reasons.push(signal.reason);
            resolve('too late');
          }),
        );
      },
    }).start();
    engine.register(
      defineWorkflow({ name: 'pay', steps: [{ name: 'charge', agent: 'payments', timeoutMs: 1_000 }] }),
    );
    const completeBy = clock.now() + 1_000;
    await engine.start('pay', null, { id: 'w-3' });
    await waitUntil(() => serving, 'the agent took the request');
    await settle(clock, 1_000);
    await waitUntil(() => agent.dropped === 1, 'the agent dropped the request at Complete By');
    assertDeadline(reasons[0], 'w-3', 'charge', completeBy);
    assert.equal(failures.length, 1);
    assertDeadline(failures[0], 'w-3', 'charge', completeBy);
    await agent.close();
    await engine.close();
    await messaging.close();
  });
});
