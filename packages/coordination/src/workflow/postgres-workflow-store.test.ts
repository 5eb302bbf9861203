import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools, withHostilePgTypes } from '@stratus/testkit';
import type pg from 'pg';
import { PostgresWorkflowStore } from './postgres-workflow-store.js';
import { submission, T0, workflowStoreContract } from './workflow-store.contract.js';

const suite = await postgresForSuite('coordination-workflows');
let schemas = 0;

describe('PostgresWorkflowStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  workflowStoreContract(
    'postgres',
    async () => new PostgresWorkflowStore({ pool: newPool(), schema: `wf_${++schemas}` }),
  );

  it("reads the same workflows whatever pg's process-wide type parsers are", async () => {
    const claim = (store: PostgresWorkflowStore, now: number) =>
      store.claim({ schedulerId: 's', definitions: ['order@1'], limit: 5, now });
    const run = async () => {
      const store = new PostgresWorkflowStore({ pool: newPool(), schema: `wf_${++schemas}` });
      try {
        const submitted = [
          await store.submit(submission('w1')),
          await store.submit(submission('w2')),
          await store.submit(submission('w1')),
        ];
        const claimed = await claim(store, T0);
        const stepped = await store.transition({
          workflowId: 'w1',
          attempt: 1,
          now: T0 + 10,
          results: '{"reserve":1}',
          to: {
            kind: 'step',
            step: 1,
            stepName: 'charge',
            timeoutMs: 2_000,
            maxFailures: 2,
            availableAt: T0 + 100,
          },
        });
        const failed = await store.transition({
          workflowId: 'w2',
          attempt: 1,
          now: T0 + 20,
          results: '{}',
          to: { kind: 'error', error: '"out of stock"' },
        });
        const nextAvailableAt = await store.nextAvailableAt(['order@1']);
        const charging = await claim(store, T0 + 100);
        const parked = await store.transition({
          workflowId: 'w1',
          attempt: 2,
          now: T0 + 110,
          results: '{"reserve":1}',
          to: { kind: 'park', availableAt: T0 + 10_000, waitUntil: T0 + 10_000, waitingFor: 'approved' },
        });
        const signalled = await store.signal('w1', 'approved', '{"by":"ada"}', T0 + 120);
        const signal = await store.readSignal('w1', 'approved');
        const due = await store.dueForRecovery(T0 + 200, 10);
        const retried = await store.recover({
          workflowId: 'w2',
          status: 'error',
          attempt: 1,
          failureCount: 0,
          now: T0 + 200,
          to: { kind: 'retry', availableAt: T0 + 300, error: '"out of stock"' },
        });
        const resumed = await claim(store, T0 + 300);
        const completed = await store.transition({
          workflowId: 'w1',
          attempt: 3,
          now: T0 + 310,
          results: '{"reserve":1,"charge":2}',
          to: { kind: 'completed', result: '2' },
        });
        return {
          submitted,
          claimed,
          stepped,
          failed,
          nextAvailableAt,
          charging,
          parked,
          signalled,
          signal,
          due,
          retried,
          resumed,
          completed,
          w1: await store.get('w1'),
          w2: await store.get('w2'),
        };
      } finally {
        await store.close();
      }
    };
    const expected = await run();
    assert.equal(expected.w1?.run.status, 'completed');
    assert.deepEqual(
      expected.resumed.map((step) => [step.workflowId, step.stepName, step.attempt]),
      [
        ['w1', 'charge', 3],
        ['w2', 'reserve', 2],
      ],
    );
    assert.deepEqual(await withHostilePgTypes(run), expected);
  });

  it('validates its options', () => {
    assert.throws(() => new PostgresWorkflowStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresWorkflowStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
