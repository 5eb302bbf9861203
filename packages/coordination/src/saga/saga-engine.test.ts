import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, exponentialBackoff, InvalidOptionsError } from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { defineSaga, type SagaStep } from './definition.js';
import {
  SagaConflictError,
  SagaNotFoundError,
  SagaStateError,
  SagaStepTimeoutError,
  UnknownSagaDefinitionError,
} from './errors.js';
import { MemorySagaStore } from './memory-saga-store.js';
import { SagaEngine } from './saga-engine.js';
import type { SagaEvent } from './saga-events.js';

const T0 = 1_750_000_000_000;

/** Lets the work run, moving the virtual clock to each timer it sets, until it settles (bounded). */
async function settle<T>(clock: VirtualClock, work: Promise<T>): Promise<T> {
  let done = false;
  work.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 1000 && !done; i++) {
    await flushMicrotasks();
    const next = clock.nextDue;
    if (!done && next !== undefined) await clock.advanceTo(next);
  }
  return work;
}

function deferred() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { gate, release };
}

function setup(
  steps: SagaStep<{ order: string }, unknown>[],
  compensation?: 'parallel' | (string | string[])[],
) {
  const clock = new VirtualClock({ now: T0 });
  const store = new MemorySagaStore();
  const definition = defineSaga<{ order: string }>({
    name: 'order',
    steps,
    ...(compensation === undefined ? {} : { compensation }),
  });
  const engine = new SagaEngine({ store, definitions: [definition], clock });
  const events: SagaEvent[] = [];
  engine.events.on((event) => events.push(event));
  return { clock, store, definition, engine, events };
}

describe('SagaEngine', () => {
  it("retries a failing do with its step's backoff on the clock, with the same idempotency key", async () => {
    const calls: { at: number; key: string; attempt: number }[] = [];
    const { clock, engine } = setup([
      {
        name: 'charge',
        retry: { maxAttempts: 4, backoff: exponentialBackoff({ initialMs: 100 }) },
        do: ({ idempotencyKey, attempt }) => {
          calls.push({ at: clock.monotonic(), key: idempotencyKey, attempt });
          if (attempt < 3) throw new Error('gateway busy');
          return 'paid';
        },
      },
    ]);
    const done = await settle(clock, engine.start('order', 'o-1', { order: 'o-1' }));
    assert.equal(done.status, 'completed');
    assert.deepEqual(calls, [
      { at: 0, key: 'o-1:charge', attempt: 1 },
      { at: 100, key: 'o-1:charge', attempt: 2 },
      { at: 300, key: 'o-1:charge', attempt: 3 },
    ]);
    assert.deepEqual(done.steps[0]?.result, 'paid');
  });

  it('hands earlier results to later steps and each undo its own result, with undo idempotency keys', async () => {
    const seen: unknown[] = [];
    const { clock, engine } = setup([
      {
        name: 'reserve',
        do: () => ({ reservation: 'r-9' }),
        undo: ({ result, idempotencyKey }) => {
          seen.push(['undo reserve', result, idempotencyKey]);
        },
      },
      {
        name: 'charge',
        retry: { maxAttempts: 1 },
        do: ({ results }) => {
          seen.push(['charge saw', results]);
          throw new Error('card declined');
        },
      },
    ]);
    const done = await settle(clock, engine.start('order', 'o-2', { order: 'o-2' }));
    assert.equal(done.status, 'compensated');
    assert.deepEqual(seen, [
      ['charge saw', { reserve: { reservation: 'r-9' } }],
      ['undo reserve', { reservation: 'r-9' }, 'o-2:reserve:undo'],
    ]);
  });

  it('does not retry an error its policy calls permanent', async () => {
    let calls = 0;
    const { clock, engine } = setup([
      {
        name: 'charge',
        retry: { maxAttempts: 5, retryable: (error) => !(error as Error).message.includes('declined') },
        do: () => {
          calls++;
          throw new Error('card declined');
        },
      },
    ]);
    const done = await settle(clock, engine.start('order', 'o-3', { order: 'o-3' }));
    assert.equal(calls, 1);
    assert.equal(done.status, 'compensated', 'nothing completed, so nothing to undo');
    assert.deepEqual(done.failure, {
      step: 'charge',
      error: { name: 'Error', message: 'card declined' },
      attempts: 1,
    });
  });

  it('undoes the stages of a custom order one after the other, each stage in parallel', async () => {
    const log: string[] = [];
    const gates = { a: deferred(), c: deferred(), b: deferred() };
    const step = (name: 'a' | 'b' | 'c'): SagaStep<{ order: string }, unknown> => ({
      name,
      do: () => undefined,
      undo: async () => {
        log.push(`start ${name}`);
        await gates[name].gate;
        log.push(`end ${name}`);
      },
    });
    const failing: SagaStep<{ order: string }, unknown> = {
      name: 'd',
      retry: { maxAttempts: 1 },
      do: () => {
        throw new Error('no');
      },
    };
    const { clock, engine } = setup([step('a'), step('b'), step('c'), failing], [['a', 'c'], 'b']);
    const running = engine.start('order', 'o-4', { order: 'o-4' });
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    assert.deepEqual(log, ['start a', 'start c'], 'a and c run together, b waits for both');
    gates.c.release();
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    assert.deepEqual(log, ['start a', 'start c', 'end c'], 'b still waits for a');
    gates.a.release();
    gates.b.release();
    const done = await settle(clock, running);
    assert.deepEqual(log, ['start a', 'start c', 'end c', 'end a', 'start b', 'end b']);
    assert.equal(done.status, 'compensated');
    assert.ok(done.steps.every((s) => s.undone?.by === 'undo'));
  });

  it('runs every undo at once when compensation is parallel', async () => {
    const started: string[] = [];
    const gate = deferred();
    const step = (name: string): SagaStep<{ order: string }, unknown> => ({
      name,
      do: () => undefined,
      undo: async () => {
        started.push(name);
        await gate.gate;
      },
    });
    const fail: SagaStep<{ order: string }, unknown> = {
      name: 'last',
      retry: { maxAttempts: 1 },
      do: () => {
        throw new Error('no');
      },
    };
    const { clock, engine } = setup([step('x'), step('y'), step('z'), fail], 'parallel');
    const running = engine.start('order', 'o-5', { order: 'o-5' });
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    assert.deepEqual(started.sort(), ['x', 'y', 'z']);
    gate.release();
    assert.equal((await settle(clock, running)).status, 'compensated');
  });

  it('times out a stuck call (aborting its signal), counting it as a failed attempt', async () => {
    const signals: AbortSignal[] = [];
    const { clock, engine, events } = setup([
      {
        name: 'ship',
        timeoutMs: 1000,
        retry: { maxAttempts: 2, backoff: constantBackoff(0) },
        do: ({ signal, attempt }) => {
          signals.push(signal);
          if (attempt === 2) return 'shipped';
          return new Promise<never>(() => {});
        },
      },
    ]);
    const running = engine.start('order', 'o-6', { order: 'o-6' });
    await clock.advance(999);
    assert.equal(signals.length, 1);
    assert.equal(signals[0]?.aborted, false);
    await clock.advance(1);
    const done = await settle(clock, running);
    assert.equal(signals[0]?.aborted, true);
    assert.ok(signals[0]?.reason instanceof SagaStepTimeoutError);
    assert.equal(done.status, 'completed');
    const failed = events.find((e) => e.type === 'step-failed');
    assert.equal(failed?.type === 'step-failed' && failed.error.code, 'ERR_STRATUS_SAGA_STEP_TIMEOUT');
  });

  it('undoes a failed step too when it may have acted (undoOnFailure), first in reverse order', async () => {
    const undone: unknown[] = [];
    const { clock, engine } = setup([
      { name: 'reserve', do: () => 'r-1', undo: ({ result }) => void undone.push(['reserve', result]) },
      {
        name: 'charge',
        undoOnFailure: true,
        timeoutMs: 500,
        retry: { maxAttempts: 1 },
        do: () => new Promise(() => {}), // the gateway never answers: it may have charged
        undo: ({ result, idempotencyKey }) => void undone.push(['charge', result, idempotencyKey]),
      },
    ]);
    const done = await settle(clock, engine.start('order', 'o-14', { order: 'o-14' }));
    assert.equal(done.status, 'compensated');
    assert.deepEqual(undone, [
      ['charge', null, 'o-14:charge:undo'],
      ['reserve', 'r-1'],
    ]);
    assert.deepEqual(
      done.steps.map((s) => [s.name, s.doFailed === true, s.undone?.by]),
      [
        ['reserve', false, 'undo'],
        ['charge', true, 'undo'],
      ],
    );
  });

  it('emits typed events as a saga runs, fails and compensates', async () => {
    const { clock, engine, events } = setup([
      { name: 'a', do: () => 1, undo: () => {} },
      {
        name: 'b',
        retry: { maxAttempts: 2, backoff: constantBackoff(10) },
        do: () => {
          throw new Error('down');
        },
      },
    ]);
    await settle(clock, engine.start('order', 'o-7', { order: 'o-7' }));
    assert.deepEqual(
      events.map((e) => [e.type, 'step' in e ? e.step : undefined]),
      [
        ['started', undefined],
        ['step-completed', 'a'],
        ['step-failed', 'b'],
        ['step-failed', 'b'],
        ['compensating', undefined],
        ['step-undone', 'a'],
        ['compensated', undefined],
      ],
    );
    const failures = events.filter((e) => e.type === 'step-failed');
    assert.deepEqual(
      failures.map((e) => e.type === 'step-failed' && [e.attempt, e.willRetry, e.phase]),
      [
        [1, true, 'do'],
        [2, false, 'do'],
      ],
    );
    assert.ok(events.every((e) => e.component === 'saga' && e.name === 'saga-engine' && e.sagaId === 'o-7'));
    assert.equal(events[6]?.at, T0 + 10, 'times from the clock: after one 10 ms backoff');
  });

  it('raises an alert with everything needed by hand when an undo gives up; retryUndo goes on once fixed', async () => {
    let refundWorks = false;
    const refundCalls: number[] = [];
    const { clock, engine, events } = setup([
      { name: 'reserve', do: () => ({ seats: 2 }), undo: () => {} },
      {
        name: 'charge',
        do: () => ({ payment: 'p-1' }),
        undoRetry: { maxAttempts: 3, backoff: constantBackoff(1000) },
        undo: ({ attempt }) => {
          refundCalls.push(clock.monotonic());
          if (!refundWorks)
            throw Object.assign(new Error(`refund refused (${attempt})`), { code: 'E_REFUND' });
        },
      },
      { name: 'notify', do: () => 'sent' },
      {
        name: 'ship',
        retry: { maxAttempts: 1 },
        do: () => {
          throw new Error('warehouse closed');
        },
      },
    ]);
    const stuck = await settle(clock, engine.start('order', 'o-8', { order: 'o-8' }));
    assert.equal(stuck.status, 'needs-operator');
    assert.deepEqual(refundCalls, [0, 1000, 2000]);
    const raised = events.find((e) => e.type === 'needs-operator');
    assert.ok(raised?.type === 'needs-operator');
    assert.deepEqual(raised.alert, {
      sagaId: 'o-8',
      definition: 'order',
      input: { order: 'o-8' },
      completedSteps: [
        { name: 'reserve', result: { seats: 2 }, completedAt: T0 },
        { name: 'charge', result: { payment: 'p-1' }, completedAt: T0 },
        { name: 'notify', result: 'sent', completedAt: T0 },
      ],
      failure: { step: 'ship', error: { name: 'Error', message: 'warehouse closed' } },
      failedUndos: [
        {
          step: 'charge',
          error: { name: 'Error', message: 'refund refused (3)', code: 'E_REFUND' },
          attempts: 3,
        },
      ],
      remaining: [['charge'], ['reserve']],
    });
    assert.deepEqual(await engine.alert('o-8'), raised.alert);
    refundWorks = true;
    const done = await settle(clock, engine.retryUndo('o-8'));
    assert.equal(done.status, 'compensated');
    assert.equal(done.failedUndos, undefined);
    assert.equal(refundCalls.length, 4);
    assert.equal(events.at(-1)?.type, 'compensated');
  });

  it('keeps waiting for an operator while another failed undo of the stage is unresolved', async () => {
    const fail = (name: string): SagaStep<{ order: string }, unknown> => ({
      name,
      do: () => undefined,
      undoRetry: { maxAttempts: 1 },
      undo: () => {
        throw new Error(`${name} undo broken`);
      },
    });
    const { clock, engine } = setup(
      [
        fail('x'),
        fail('y'),
        {
          name: 'z',
          retry: { maxAttempts: 1 },
          do: () => {
            throw new Error('no');
          },
        },
      ],
      'parallel',
    );
    const stuck = await settle(clock, engine.start('order', 'o-9', { order: 'o-9' }));
    assert.deepEqual(
      stuck.failedUndos?.map((f) => f.step),
      ['x', 'y'],
    );
    const half = await engine.resolveStep('o-9', 'x');
    assert.equal(half.status, 'needs-operator');
    assert.deepEqual(
      half.failedUndos?.map((f) => f.step),
      ['y'],
    );
    const done = await engine.resolveStep('o-9', 'y', { note: 'done by hand' });
    assert.equal(done.status, 'compensated');
  });

  it('refuses operator calls that do not fit the saga', async () => {
    const { clock, engine } = setup([{ name: 'a', do: () => 1, undo: () => {} }]);
    await settle(clock, engine.start('order', 'o-10', { order: 'o-10' }));
    await assert.rejects(engine.retryUndo('o-10'), SagaStateError);
    await assert.rejects(engine.resolveStep('o-10', 'a'), SagaStateError);
    await assert.rejects(engine.alert('o-10'), SagaStateError);
    await assert.rejects(engine.retryUndo('nobody'), SagaNotFoundError);
    await assert.rejects(engine.resume('nobody'), SagaNotFoundError);
  });

  it('starts a saga once: a repeated start returns the stored saga without running a step again', async () => {
    let calls = 0;
    const { clock, engine, store } = setup([
      {
        name: 'a',
        do: () => {
          calls++;
          return calls;
        },
      },
    ]);
    const [one, two] = await settle(
      clock,
      Promise.all([
        engine.start('order', 'o-11', { order: 'o-11' }),
        engine.start('order', 'o-11', { order: 'o-11' }),
      ]),
    );
    assert.deepEqual(one, two);
    assert.deepEqual(await engine.start('order', 'o-11', { order: 'o-11' }), one);
    assert.equal(calls, 1);
    const other = defineSaga({ name: 'other', steps: [{ name: 'a', do: () => 1 }] });
    const both = new SagaEngine({ store, definitions: [other] });
    await assert.rejects(both.start(other, 'o-11', {}), SagaStateError);
    const running = { ...one, sagaId: 'o-13', status: 'running' as const, steps: [], version: 1 };
    await store.insert(running);
    await assert.rejects(both.resume('o-13'), UnknownSagaDefinitionError, 'a definition it was not given');
  });

  it('stops driving a saga another engine changed first (both used the same keys)', async () => {
    const gate = deferred();
    const keys: string[] = [];
    const steps: SagaStep<{ order: string }, unknown>[] = [
      {
        name: 'a',
        do: async ({ idempotencyKey }) => {
          keys.push(idempotencyKey);
          await gate.gate;
          return 1;
        },
      },
    ];
    const { clock, engine, store, definition } = setup(steps);
    const first = engine.start('order', 'o-12', { order: 'o-12' });
    await flushMicrotasks();
    const second = new SagaEngine({ store, definitions: [definition], clock }).resume('o-12');
    await flushMicrotasks();
    gate.release();
    const outcomes = await Promise.allSettled([first, second]);
    assert.deepEqual(keys, ['o-12:a', 'o-12:a']);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
    const lost = outcomes.find((o) => o.status === 'rejected');
    assert.ok(lost?.status === 'rejected' && lost.reason instanceof SagaConflictError);
    assert.equal((await store.get('o-12'))?.status, 'completed');
  });

  it('refuses bad options and unknown definitions', async () => {
    const store = new MemorySagaStore();
    const definition = defineSaga({ name: 'x', steps: [{ name: 'a', do: () => 1 }] });
    for (const bad of [
      undefined,
      { store: {}, definitions: [definition] },
      { store, definitions: [] },
      { store, definitions: [definition, definition] },
      { store, definitions: [definition], clock: 5 },
      { store, definitions: [definition], name: '' },
    ]) {
      assert.throws(() => new SagaEngine(bad as never), InvalidOptionsError, JSON.stringify(bad));
    }
    const engine = new SagaEngine({ store, definitions: [definition] });
    await assert.rejects(engine.start('nope', 's', {}), UnknownSagaDefinitionError);
    await assert.rejects(engine.start(definition, '', {}), InvalidOptionsError);
    await assert.rejects(engine.resolveStep('s', 'a', { note: 5 as never }), SagaNotFoundError);
  });
});
