/**
 * The contract every WorkflowStore passes (memory, SQLite, PostgreSQL): atomic submission, exclusive claims,
 * fenced transitions, compare-and-set recoveries, signals, wake-ups, and an engine with a Supervisor running
 * workflows over it. Each adapter's test file calls `workflowStoreContract` with a factory of fresh, empty stores.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { immediateBackoff } from '@stratus/core';
import { waitUntil } from '@stratus/testkit';
import { MemoryLeaseStore } from '../memory-lease-store.js';
import { defineWorkflow } from './definition.js';
import { WorkflowFailedError } from './errors.js';
import { WorkflowEngine } from './workflow-engine.js';
import type { Submission, WorkflowStore } from './workflow-store.js';
import { WorkflowSupervisor } from './workflow-supervisor.js';

export const T0 = 1_750_000_000_000;
const DEF = 'order@1';

/** A submission of workflow `workflowId` (order@1, first step 'reserve') at T0, with `extra` over it. */
export const submission = (workflowId: string, extra: Partial<Submission> = {}): Submission => ({
  workflowId,
  name: 'order',
  version: 1,
  input: JSON.stringify({ id: workflowId }),
  now: T0,
  first: { stepName: 'reserve', timeoutMs: 1_000, maxFailures: 3 },
  ...extra,
});

const claimOne = async (store: WorkflowStore, now = T0, schedulerId = 'scheduler-a') => {
  const [claimed] = await store.claim({ schedulerId, definitions: [DEF], limit: 1, now });
  assert.ok(claimed, 'a step was claimed');
  return claimed;
};

export function workflowStoreContract(kind: string, open: () => Promise<WorkflowStore>): void {
  describe(`WorkflowStore contract: ${kind}`, () => {
    it('submits a workflow and its state record together, with the catalogue fields', async () => {
      const store = await open();
      assert.deepEqual(await store.submit(submission('w1')), { created: true });
      const record = await store.get('w1');
      assert.ok(record);
      assert.equal(record.run.status, 'running');
      assert.equal(record.run.input, '{"id":"w1"}');
      assert.deepEqual(
        {
          step: record.state.stepName,
          status: record.state.status,
          lockedBy: record.state.lockedBy,
          completeBy: record.state.completeBy,
          failureCount: record.state.failureCount,
          attempt: record.state.attempt,
        },
        { step: 'reserve', status: 'pending', lockedBy: null, completeBy: null, failureCount: 0, attempt: 0 },
      );
      const again = await store.submit(submission('w1', { name: 'other', version: 2 }));
      assert.equal(again.created, false);
      assert.equal(again.created === false && again.existing.name, 'order');
      assert.equal(await store.get('missing'), undefined);
      await store.close();
    });

    it('submits already claimed for the submitting Scheduler', async () => {
      const store = await open();
      await store.submit(submission('w1', { claimBy: 'scheduler-a' }));
      const { state } = (await store.get('w1')) ?? assert.fail('missing');
      assert.equal(state.status, 'processing');
      assert.equal(state.lockedBy, 'scheduler-a');
      assert.equal(state.completeBy, T0 + 1_000);
      assert.equal(state.attempt, 1);
      assert.deepEqual(await store.claim({ schedulerId: 'b', definitions: [DEF], limit: 5, now: T0 }), []);
      await store.close();
    });

    it('claims each pending step once, even for Schedulers racing', async () => {
      const store = await open();
      for (let i = 0; i < 10; i++) await store.submit(submission(`w${i}`));
      await store.submit(submission('other', { name: 'refund' }));
      await store.submit(submission('later', { now: T0 + 60_000 }));
      const [a, b] = await Promise.all([
        store.claim({ schedulerId: 'a', definitions: [DEF], limit: 6, now: T0 }),
        store.claim({ schedulerId: 'b', definitions: [DEF], limit: 6, now: T0 }),
      ]);
      const ids = [...a, ...b].map((step) => step.workflowId).sort();
      assert.equal(ids.length, 10);
      assert.equal(new Set(ids).size, 10);
      assert.ok(!ids.includes('other') && !ids.includes('later'));
      const first = a[0] ?? b[0];
      assert.ok(first);
      assert.equal(first.status, 'processing');
      assert.equal(first.attempt, 1);
      assert.equal(first.completeBy, T0 + 1_000);
      assert.equal(first.input, JSON.stringify({ id: first.workflowId }));
      assert.equal(await store.nextAvailableAt([DEF]), T0 + 60_000);
      await store.close();
    });

    it('accepts a transition only from the current, timely claim', async () => {
      const store = await open();
      await store.submit(submission('w1'));
      const claimed = await claimOne(store);
      const next = {
        kind: 'step',
        step: 1,
        stepName: 'charge',
        timeoutMs: 2_000,
        maxFailures: 2,
        availableAt: T0,
      } as const;
      const base = { workflowId: 'w1', now: T0 + 10, results: '{"reserve":1}' };
      assert.equal(
        await store.transition({ ...base, attempt: claimed.attempt + 1, to: next }),
        false,
        'stale attempt',
      );
      assert.equal(
        await store.transition({ ...base, now: T0 + 1_001, attempt: claimed.attempt, to: next }),
        false,
        'late',
      );
      assert.equal(
        await store.transition({
          ...base,
          attempt: claimed.attempt,
          to: { ...next, claimBy: 'scheduler-a' },
        }),
        true,
      );
      const { state } = (await store.get('w1')) ?? assert.fail('missing');
      assert.equal(state.stepName, 'charge');
      assert.equal(state.status, 'processing');
      assert.equal(state.attempt, claimed.attempt + 1);
      assert.equal(state.completeBy, T0 + 10 + 2_000);
      assert.equal(state.results, '{"reserve":1}');
      assert.equal(
        await store.transition({ ...base, attempt: claimed.attempt, to: next }),
        false,
        'moved on',
      );
      assert.equal(
        await store.transition({
          ...base,
          now: T0 + 20,
          attempt: state.attempt,
          results: '{"reserve":1,"charge":2}',
          to: { kind: 'completed', result: '2' },
        }),
        true,
      );
      const done = (await store.get('w1')) ?? assert.fail('missing');
      assert.equal(done.run.status, 'completed');
      assert.equal(done.run.result, '2');
      assert.equal(done.run.finishedAt, T0 + 20);
      assert.equal(done.state.status, 'processed');
      await store.close();
    });

    it('parks a step until its time, or until the signal it waits for', async () => {
      const store = await open();
      await store.submit(submission('w1'));
      const claimed = await claimOne(store);
      const park = {
        kind: 'park',
        availableAt: T0 + 5_000,
        waitUntil: T0 + 5_000,
        waitingFor: 'approved',
      } as const;
      assert.equal(
        await store.transition({
          workflowId: 'w1',
          attempt: claimed.attempt,
          now: T0,
          results: '{}',
          to: park,
        }),
        true,
      );
      assert.deepEqual(
        await store.claim({ schedulerId: 'a', definitions: [DEF], limit: 1, now: T0 + 1 }),
        [],
      );
      assert.equal(await store.signal('w1', 'approved', '{"by":"ada"}', T0 + 2), true);
      assert.equal(
        await store.signal('w1', 'approved', '{"by":"bob"}', T0 + 3),
        false,
        'the first signal wins',
      );
      assert.equal(await store.readSignal('w1', 'approved'), '{"by":"ada"}');
      assert.equal(await store.readSignal('w1', 'other'), undefined);
      const woken = await claimOne(store, T0 + 3);
      assert.equal(woken.waitingFor, 'approved');
      assert.equal(woken.waitUntil, T0 + 5_000);
      // Parking again after the signal came (it came while the step ran) leaves the step available at once.
      await store.transition({
        workflowId: 'w1',
        attempt: woken.attempt,
        now: T0 + 4,
        results: '{}',
        to: park,
      });
      assert.equal((await claimOne(store, T0 + 4)).workflowId, 'w1');
      await store.close();
    });

    it('lets one of two racing Supervisors recover a step, then fails it at the threshold', async () => {
      const store = await open();
      await store.submit(
        submission('w1', { first: { stepName: 'reserve', timeoutMs: 1_000, maxFailures: 2 } }),
      );
      await store.submit(submission('w2', { now: T0 + 60_000 }));
      const claimed = await claimOne(store);
      assert.deepEqual(await store.dueForRecovery(T0 + 1_000, 10), [], 'not before Complete By');
      const [due] = await store.dueForRecovery(T0 + 1_001, 10);
      assert.ok(due);
      assert.equal(due.status, 'processing');
      assert.equal(due.lockedBy, 'scheduler-a');
      const retry = {
        workflowId: due.workflowId,
        status: due.status,
        attempt: due.attempt,
        failureCount: due.failureCount,
        now: T0 + 1_001,
        to: { kind: 'retry', availableAt: T0 + 1_500, error: 'timed out' },
      } as const;
      const outcomes = await Promise.all([store.recover(retry), store.recover(retry)]);
      assert.deepEqual(outcomes.sort(), [false, true]);
      const { state } = (await store.get(due.workflowId)) ?? assert.fail('missing');
      assert.equal(state.failureCount, 1);
      assert.equal(state.status, 'pending');
      assert.equal(state.lockedBy, null);
      assert.equal(state.availableAt, T0 + 1_500);
      assert.equal(state.lastError, 'timed out');
      // A late write of the recovered claim is refused.
      assert.equal(
        await store.transition({
          workflowId: due.workflowId,
          attempt: claimed.attempt,
          now: T0 + 900,
          results: '{}',
          to: { kind: 'completed', result: '1' },
        }),
        false,
      );
      // The retry fails with an error; the Supervisor gives up at the threshold.
      const again = await claimOne(store, T0 + 1_500);
      assert.equal(again.attempt, claimed.attempt + 1);
      await store.transition({
        workflowId: again.workflowId,
        attempt: again.attempt,
        now: T0 + 1_600,
        results: '{}',
        to: { kind: 'error', error: 'card declined' },
      });
      const [failed] = await store.dueForRecovery(T0 + 1_600, 10);
      assert.ok(failed);
      assert.equal(failed.status, 'error');
      assert.equal(failed.lastError, 'card declined');
      const giveUp = {
        workflowId: failed.workflowId,
        status: failed.status,
        attempt: failed.attempt,
        failureCount: failed.failureCount,
        now: T0 + 1_700,
        to: { kind: 'failed', error: 'card declined', context: '{"alert":true}' },
      } as const;
      assert.deepEqual((await Promise.all([store.recover(giveUp), store.recover(giveUp)])).sort(), [
        false,
        true,
      ]);
      const end = (await store.get(failed.workflowId)) ?? assert.fail('missing');
      assert.equal(end.run.status, 'failed');
      assert.equal(end.run.error, '{"alert":true}');
      assert.equal(end.state.status, 'error');
      assert.equal(end.state.failureCount, 2);
      assert.deepEqual(
        await store.dueForRecovery(T0 + 9_000, 10),
        [],
        'a failed workflow is not recovered again',
      );
      await store.close();
    });

    it('wakes watchers when a step becomes pending', async () => {
      const store = await open();
      let wakeups = 0;
      const unwatch = store.watch(() => wakeups++);
      await waitUntil(async () => {
        const before = wakeups;
        await store.submit(submission(`w${before}-${Math.random()}`));
        await new Promise((resolve) => setTimeout(resolve, 20));
        return wakeups > before;
      }, 'a submission wakes the watcher');
      unwatch();
      await store.close();
    });

    it('runs three-step workflows end to end under an engine and a Supervisor', async () => {
      const store = await open();
      const effects = new Map<string, number>();
      let chargeCalls = 0;
      const definition = defineWorkflow<{ amount: number }, string>({
        name: 'order',
        stepTimeoutMs: 5_000,
        steps: [
          { name: 'reserve', run: ({ input }) => ({ reserved: input.amount }) },
          {
            name: 'charge',
            run: ({ idempotencyKey }) => {
              chargeCalls++;
              if (chargeCalls === 1) throw new Error('gateway hiccup');
              effects.set(idempotencyKey, (effects.get(idempotencyKey) ?? 0) + 1);
              return 'charged';
            },
          },
          { name: 'ship', run: ({ results }) => `shipped after ${String(results.charge)}` },
        ],
      });
      const engine = new WorkflowEngine({ store, pollIntervalMs: 50, resultPollMs: 20 }).register(definition);
      const supervisor = new WorkflowSupervisor({
        store,
        leases: new MemoryLeaseStore(),
        intervalMs: 20,
        backoff: immediateBackoff(),
        engine,
      }).start();
      try {
        const runs = await Promise.all(
          [1, 2, 3].map((n) => engine.start('order', { amount: n }, { id: `o${n}` })),
        );
        const results = await Promise.allSettled(runs.map((run) => run.result()));
        assert.deepEqual(
          results.map((r) => r.status === 'fulfilled' && r.value),
          ['shipped after charged', 'shipped after charged', 'shipped after charged'],
        );
        assert.equal(chargeCalls, 4, 'one charge failed once and was retried');
        assert.deepEqual([...effects.values()], [1, 1, 1]);
        const status = await engine.status('o1');
        assert.equal(status.status, 'completed');
        assert.deepEqual(status.results, {
          reserve: { reserved: 1 },
          charge: 'charged',
          ship: 'shipped after charged',
        });
        const failing = defineWorkflow({
          name: 'doomed',
          maxFailures: 2,
          steps: [
            {
              name: 'boom',
              run: () => {
                throw new Error('always');
              },
            },
          ],
        });
        engine.register(failing);
        const doomed = await engine.start('doomed', null);
        await assert.rejects(
          doomed.result(),
          (error: unknown) => error instanceof WorkflowFailedError && /always/.test(error.message),
        );
      } finally {
        await supervisor.stop();
        await engine.close();
        await store.close();
      }
    });
  });
}
