import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, InvalidOptionsError } from '@stratus/core';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { MemoryLeaseStore } from '../memory-lease-store.js';
import { defineWorkflow, type WorkflowStepContext } from './definition.js';
import {
  DuplicateWorkflowError,
  PermanentStepError,
  UnknownWorkflowError,
  WorkflowFailedError,
  WorkflowIdConflictError,
} from './errors.js';
import { engineSetup, settle } from './fixtures/engine-setup.js';
import { MemoryWorkflowStore } from './memory-workflow-store.js';
import { RemoteAgent } from './remote-agent.js';
import { WorkflowEngine } from './workflow-engine.js';
import { WorkflowSupervisor } from './workflow-supervisor.js';

/** An effect store that applies each idempotency key once and counts refused duplicates. */
function effectStore() {
  const applied = new Map<string, string>();
  let duplicates = 0;
  return {
    applied,
    get duplicates() {
      return duplicates;
    },
    apply(key: string, effect: string) {
      if (applied.has(key)) duplicates++;
      else applied.set(key, effect);
    },
  };
}

describe('WorkflowEngine', () => {
  it('runs the steps in order with input, previous results, idempotency keys and typed events', async () => {
    const { engine, events } = engineSetup();
    const seen: Omit<WorkflowStepContext, 'signal'>[] = [];
    const step = (name: string) => ({
      name,
      run: (context: WorkflowStepContext<{ sku: string }>) => {
        const { signal, ...rest } = context;
        assert.equal(signal.aborted, false);
        seen.push(rest);
        return `${name}:${context.input.sku}`;
      },
    });
    engine.register(
      defineWorkflow({ name: 'order', steps: [step('reserve'), step('charge'), step('ship')] }),
    );
    const run = await engine.start<string>('order', { sku: 'a1' }, { id: 'o-1' });
    assert.equal(run.id, 'o-1');
    assert.equal(await run.result(), 'ship:a1');
    assert.deepEqual(
      seen.map((c) => [c.step, c.idempotencyKey, Object.keys(c.results).join(',')]),
      [
        ['reserve', 'o-1:reserve', ''],
        ['charge', 'o-1:charge', 'reserve'],
        ['ship', 'o-1:ship', 'reserve,charge'],
      ],
    );
    assert.deepEqual(
      events.map((e) => `${e.type}${'step' in e ? `:${e.step}` : ''}`),
      [
        'submitted',
        'step-started:reserve',
        'step-completed:reserve',
        'step-started:charge',
        'step-completed:charge',
        'step-started:ship',
        'step-completed:ship',
        'completed',
      ],
    );
    // Starting the same id again gives the same workflow; another workflow's name under that id is refused.
    assert.equal(await (await engine.start('order', { sku: 'zz' }, { id: 'o-1' })).result(), 'ship:a1');
    engine.register(defineWorkflow({ name: 'refund', steps: [step('x')] }));
    await assert.rejects(engine.start('refund', {}, { id: 'o-1' }), WorkflowIdConflictError);
    await engine.close();
  });

  it('ignores an agent that misses Complete By; the Supervisor retries the step and its effect happens once', async () => {
    const { clock, engine, supervisor, events } = engineSetup();
    const effects = effectStore();
    let calls = 0;
    const late: (() => void)[] = [];
    engine.register(
      defineWorkflow({
        name: 'pay',
        steps: [
          {
            name: 'charge',
            timeoutMs: 1_000,
            run: async ({ idempotencyKey, signal }) => {
              calls++;
              if (calls === 1) {
                // The first agent is slow: it applies its effect after Complete By (idempotently) and answers late.
                await new Promise<void>((resolve) => late.push(resolve));
                assert.equal(signal.aborted, true);
              }
              effects.apply(idempotencyKey, 'charged');
              return `charged on call ${calls}`;
            },
          },
        ],
      }),
    );
    const run = await engine.start('pay', null, { id: 'p-1' });
    await settle(clock, 1_001);
    assert.ok(events.some((e) => e.type === 'step-failed' && e.reason === 'deadline'));
    assert.equal(await supervisor.sweep(), 1);
    await settle(clock, 100);
    assert.equal(await run.result(), 'charged on call 2');
    late[0]?.();
    await settle(clock);
    assert.equal(effects.applied.size, 1);
    assert.equal(effects.duplicates, 1, 'the late agent’s effect was refused by its key');
    assert.equal((await engine.status('p-1')).result, 'charged on call 2');
    const retried = events.filter((e) => e.type === 'retried');
    assert.equal(retried.length, 1);
    assert.equal(retried[0]?.type === 'retried' && retried[0].reason, 'timeout');
    await engine.close();
  });

  it('fails the workflow at the failure threshold with one alert carrying its context', async () => {
    const { clock, engine, supervisor, events } = engineSetup();
    engine.register(
      defineWorkflow({
        name: 'flaky',
        maxFailures: 3,
        steps: [{ name: 'call', run: ({ failures }) => Promise.reject(new Error(`down (${failures})`)) }],
      }),
    );
    const run = await engine.start('flaky', { order: 7 }, { id: 'f-1' });
    const outcome = assert.rejects(run.result(), WorkflowFailedError);
    for (let i = 0; i < 3; i++) {
      await settle(clock);
      await supervisor.sweep();
      await settle(clock, 100);
    }
    await outcome;
    const alerts = events.filter((e) => e.type === 'failed');
    assert.equal(alerts.length, 1);
    assert.deepEqual(alerts[0]?.type === 'failed' && alerts[0].context, {
      workflowId: 'f-1',
      workflow: 'flaky',
      version: 1,
      step: 'call',
      failureCount: 3,
      error: 'down (2)',
      reason: 'threshold',
    });
    assert.equal(events.filter((e) => e.type === 'retried').length, 2);
    assert.equal(await supervisor.sweep(), 0, 'nothing left to recover');
    assert.equal((await engine.status('f-1')).status, 'failed');
    await engine.close();
  });

  it('fails at once on a PermanentStepError', async () => {
    const { engine, events } = engineSetup();
    engine.register(
      defineWorkflow({
        name: 'card',
        steps: [{ name: 'charge', run: () => Promise.reject(new PermanentStepError('declined')) }],
      }),
    );
    const run = await engine.start('card', null);
    await assert.rejects(run.result(), /declined/);
    assert.equal(events.filter((e) => e.type === 'failed').length, 1);
    await engine.close();
  });

  it('sleeps durably until the step’s time', async () => {
    const { clock, engine } = engineSetup();
    let woke = false;
    engine.register(
      defineWorkflow({
        name: 'reminder',
        steps: [
          { name: 'nap', sleepMs: ({ input }) => (input as { ms: number }).ms },
          { name: 'remind', run: () => (woke = true) },
        ],
      }),
    );
    const run = await engine.start('reminder', { ms: 60_000 });
    await settle(clock, 59_999);
    assert.equal(woke, false);
    assert.equal((await run.status()).stepStatus, 'pending');
    await settle(clock, 1);
    await waitUntil(() => woke, 'the step after the sleep ran');
    assert.equal(await run.result(), true);
    await engine.close();
  });

  it('waits for a named signal, with a timeout branch or failure at its deadline', async () => {
    const { clock, engine } = engineSetup();
    engine.register(
      defineWorkflow({
        name: 'approval',
        steps: [
          { name: 'ask', run: () => 'asked' },
          { name: 'decision', waitFor: 'approved', waitMs: 10_000, onTimeout: { goto: 'escalate' } },
          { name: 'apply', run: ({ results }) => `applied by ${(results.decision as { by: string }).by}` },
          {
            name: 'escalate',
            run: ({ results }) => `done (${results.apply === undefined ? 'escalated' : 'approved'})`,
          },
        ],
      }),
    );
    engine.register(
      defineWorkflow({ name: 'strict', steps: [{ name: 'decision', waitFor: 'approved', waitMs: 5_000 }] }),
    );
    const approved = await engine.start('approval', null, { id: 'a-1' });
    const ignored = await engine.start('approval', null, { id: 'a-2' });
    const strict = await engine.start('strict', null, { id: 'a-3' });
    await settle(clock, 1_000);
    assert.equal(await engine.signal('a-1', 'approved', { by: 'ada' }), true);
    assert.equal(await engine.signal('a-1', 'approved', { by: 'bob' }), false);
    await settle(clock);
    assert.equal(await approved.result(), 'done (approved)');
    assert.deepEqual((await approved.status()).results.apply, 'applied by ada');
    await settle(clock, 10_000);
    assert.equal(await ignored.result(), 'done (escalated)');
    await assert.rejects(strict.result(), /signal-timeout|waited for signal/);
    await engine.close();
  });

  it('resumes a workflow whose Scheduler crashed mid-step', async () => {
    const { clock, store, engine, supervisor } = engineSetup();
    engine.register(
      defineWorkflow({
        name: 'job',
        steps: [
          { name: 'a', run: () => 'a' },
          { name: 'b', run: () => 'b' },
        ],
      }),
    );
    // A Scheduler in another process submitted and claimed the workflow, then died.
    await store.submit({
      workflowId: 'j-1',
      name: 'job',
      version: 1,
      input: 'null',
      now: clock.now(),
      first: { stepName: 'a', timeoutMs: 2_000, maxFailures: 3 },
      claimBy: 'dead-scheduler',
    });
    engine.launch();
    await settle(clock, 1_000);
    assert.equal(await supervisor.sweep(), 0, 'not before Complete By');
    await settle(clock, 1_001);
    assert.equal(await supervisor.sweep(), 1);
    await settle(clock, 100);
    assert.equal(await engine.handle('j-1').result(), 'b');
    await engine.close();
  });

  it('never double-recovers a step with two Supervisors racing', async () => {
    const { clock, store } = engineSetup();
    const leases = new MemoryLeaseStore();
    const supervisors = [1, 2].map(
      (n) =>
        new WorkflowSupervisor({
          store,
          leases,
          clock,
          candidateId: `s${n}`,
          intervalMs: 500,
          backoff: constantBackoff(10_000),
        }),
    );
    const retried: string[] = [];
    for (const s of supervisors) s.events.on((e) => e.type === 'retried' && retried.push(e.workflowId));
    for (let i = 0; i < 20; i++) {
      await store.submit({
        workflowId: `w${i}`,
        name: 'job',
        version: 1,
        input: 'null',
        now: clock.now(),
        first: { stepName: 'a', timeoutMs: 1_000, maxFailures: 5 },
        claimBy: 'dead',
      });
    }
    await settle(clock, 1_001);
    // Sweeps called directly, at once, on both (as a paused leader resuming would).
    const counts = await Promise.all(supervisors.map((s) => s.sweep()));
    assert.equal(counts[0]! + counts[1]!, 20);
    // And both started: only one leads, and its periodic sweeps find nothing more to do.
    for (const s of supervisors) s.start();
    await settle(clock, 10);
    assert.equal(supervisors.filter((s) => s.isLeader).length, 1);
    await settle(clock, 2_000);
    assert.equal(retried.length, 20);
    assert.equal(new Set(retried).size, 20);
    for (let i = 0; i < 20; i++) assert.equal((await store.get(`w${i}`))?.state.failureCount, 1);
    for (const s of supervisors) await s.stop();
  });

  it('runs agent steps on a RemoteAgent over request/reply; a late agent sends nothing', async () => {
    const clock = new VirtualClock();
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
    const store = new MemoryWorkflowStore();
    const engine = new WorkflowEngine({ store, clock, messaging });
    const effects = effectStore();
    let slow = false;
    const agent = await new RemoteAgent({
      messaging,
      queue: 'payments',
      handler: async ({ idempotencyKey, input, signal }) => {
        if (slow) await new Promise((resolve) => signal.addEventListener('abort', resolve));
        effects.apply(idempotencyKey, 'paid');
        return { paid: (input as { amount: number }).amount };
      },
    }).start();
    engine.register(
      defineWorkflow({ name: 'pay', steps: [{ name: 'charge', agent: 'payments', timeoutMs: 1_000 }] }),
    );
    const run = await engine.start('pay', { amount: 12 });
    await waitUntil(async () => (await run.status()).status === 'completed', 'the remote step completed');
    assert.deepEqual(await run.result(), { paid: 12 });
    slow = true;
    const stuck = await engine.start('pay', { amount: 5 }, { id: 'stuck' });
    await waitUntil(() => agent.dropped === 0 && effects.applied.size === 1, 'settled');
    await settle(clock, 1_001);
    await waitUntil(() => agent.dropped === 1, 'the agent dropped the request past Complete By');
    const status = await stuck.status();
    assert.equal(status.stepStatus, 'processing', 'left for the Supervisor');
    await agent.close();
    await engine.close();
    await messaging.close();
  });

  it('runs each workflow on the version it started with', async () => {
    const { engine } = engineSetup();
    engine.register(defineWorkflow({ name: 'greet', version: 1, steps: [{ name: 'a', run: () => 'v1' }] }));
    engine.register(defineWorkflow({ name: 'greet', version: 2, steps: [{ name: 'a', run: () => 'v2' }] }));
    assert.equal(await (await engine.start('greet', null)).result(), 'v2');
    const old = await engine.start('greet', null, { version: 1 });
    assert.equal(await old.result(), 'v1');
    assert.equal((await old.status()).version, 1);
    await engine.close();
  });

  it('refuses bad input with typed errors', async () => {
    const store = new MemoryWorkflowStore();
    assert.throws(() => new WorkflowEngine({ store: {} as never }), InvalidOptionsError);
    assert.throws(() => new WorkflowEngine({ store, concurrency: 0 }), InvalidOptionsError);
    assert.throws(() => new WorkflowEngine({ store, pollIntervalMs: -1 }), InvalidOptionsError);
    const engine = new WorkflowEngine({ store, scheduler: false });
    const definition = defineWorkflow({ name: 'x', steps: [{ name: 'a', run: () => 1 }] });
    engine.register(definition);
    assert.throws(() => engine.register(definition), DuplicateWorkflowError);
    assert.throws(() => engine.register({} as never), InvalidOptionsError);
    assert.throws(
      () =>
        new WorkflowEngine({ store }).register(
          defineWorkflow({ name: 'remote', steps: [{ name: 'a', agent: 'q' }] }),
        ),
      InvalidOptionsError,
    );
    await assert.rejects(engine.start('nope', null), UnknownWorkflowError);
    await assert.rejects(engine.start('x', null, { version: 2 }), UnknownWorkflowError);
    await assert.rejects(engine.start('x', null, { id: '' }), InvalidOptionsError);
    await assert.rejects(engine.signal('missing', 'go'), /No workflow/);
    // A submit-only engine leaves the workflow pending for a Scheduler elsewhere.
    const run = await engine.start('x', null);
    assert.equal((await run.status()).stepStatus, 'pending');
    assert.throws(
      () => new WorkflowSupervisor({ store, leases: new MemoryLeaseStore(), intervalMs: 0 }),
      InvalidOptionsError,
    );
    await engine.close();
  });
});
