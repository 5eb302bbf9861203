/**
 * The contract every SagaStore passes (memory, SQLite, PostgreSQL): the store's own guarantees (insert once,
 * compare-and-set updates, listing by status, exact documents) and a SagaEngine over it completing, compensating,
 * resuming after a crash and stopping for an operator. Each adapter's test file calls `sagaStoreContract` with a
 * factory giving a fresh, empty store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError, immediateBackoff } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { defineSaga } from './definition.js';
import { SagaEngine } from './saga-engine.js';
import type { SagaRecord, SagaStatus, SagaStore } from './saga-store.js';

const T0 = 1_750_000_000_000;

function newRecord(sagaId: string, status: SagaStatus = 'running'): SagaRecord {
  return {
    sagaId,
    definition: 'trip',
    input: { traveller: 'ada', legs: ['SEA-LHR', 'LHR-CDG'] },
    status,
    steps: [],
    version: 1,
    createdAt: T0,
    updatedAt: T0,
  };
}

/** A trip saga whose services are maps keyed by idempotency key, as an idempotent receiver keeps them. */
function tripSaga(failAt?: string, undoFailsAt?: string) {
  const effects = new Map<string, string>();
  const calls: string[] = [];
  const retry = { maxAttempts: 2, backoff: immediateBackoff() };
  const step = (name: string) => ({
    name,
    retry,
    undoRetry: retry,
    do: ({ idempotencyKey }: { idempotencyKey: string }) => {
      calls.push(`do:${name}`);
      if (name === failAt) throw new Error(`${name} is sold out`);
      if (!effects.has(idempotencyKey)) effects.set(idempotencyKey, name);
      return { booking: `${name}-ref` };
    },
    undo: ({ idempotencyKey, result }: { idempotencyKey: string; result: { booking: string } }) => {
      calls.push(`undo:${name}`);
      if (name === undoFailsAt) throw new Error(`cannot cancel ${result.booking}`);
      if (!effects.has(idempotencyKey)) effects.set(idempotencyKey, `cancel ${result.booking}`);
    },
  });
  const definition = defineSaga<{ traveller: string }>({
    name: 'trip',
    steps: [step('flight1'), step('flight2'), step('hotel')],
  });
  return { definition, effects, calls };
}

export function sagaStoreContract(kind: string, open: () => Promise<SagaStore>): void {
  describe(`SagaStore contract: ${kind}`, () => {
    it('inserts a saga once and reads it back exactly', async () => {
      const store = await open();
      const record = {
        ...newRecord('s-1'),
        input: { nested: { list: [1, 'two', null, true], text: 'ünïcödé ✈', big: 2 ** 53 - 1 } },
      };
      assert.equal(await store.insert(record), true);
      assert.deepEqual(await store.get('s-1'), record);
      assert.equal(await store.insert({ ...record, input: 'other' }), false, 'the id exists');
      assert.deepEqual((await store.get('s-1'))?.input, record.input, 'the first insert is kept');
      assert.equal(await store.get('missing'), undefined);
    });

    it('updates only from the version it read (compare-and-set)', async () => {
      const store = await open();
      const record = newRecord('s-1');
      await store.insert(record);
      const v2: SagaRecord = {
        ...record,
        version: 2,
        steps: [{ name: 'flight1', result: { booking: 'F1' }, completedAt: T0 + 1 }],
        updatedAt: T0 + 1,
      };
      assert.equal(await store.update(v2), true);
      assert.equal(
        await store.update({ ...record, version: 2, status: 'completed' }),
        false,
        'stale version',
      );
      assert.equal(await store.update({ ...v2, version: 4 }), false, 'skips a version');
      assert.deepEqual(await store.get('s-1'), v2);
      const v3: SagaRecord = { ...v2, version: 3, status: 'compensating', updatedAt: T0 + 2 };
      assert.equal(await store.update(v3), true);
      assert.equal((await store.get('s-1'))?.status, 'compensating');
      assert.equal(await store.update({ ...newRecord('nobody'), version: 2 }), false, 'no such saga');
    });

    it('lets exactly one of many concurrent writers of one version win', async () => {
      const store = await open();
      await store.insert(newRecord('race'));
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.update({ ...newRecord('race'), version: 2, input: { writer: i } }),
        ),
      );
      assert.equal(outcomes.filter(Boolean).length, 1);
      const winner = outcomes.indexOf(true);
      assert.deepEqual((await store.get('race'))?.input, { writer: winner });
    });

    it('lists sagas by status in id order, page by page', async () => {
      const store = await open();
      const statuses: SagaStatus[] = ['running', 'completed', 'compensating', 'needs-operator', 'running'];
      for (const [i, status] of statuses.entries()) await store.insert(newRecord(`s-${5 - i}`, status));
      assert.deepEqual(
        (await store.list()).map((s) => s.sagaId),
        ['s-1', 's-2', 's-3', 's-4', 's-5'],
      );
      const active = await store.list({ statuses: ['running', 'compensating'] });
      assert.deepEqual(
        active.map((s) => [s.sagaId, s.status]),
        [
          ['s-1', 'running'],
          ['s-3', 'compensating'],
          ['s-5', 'running'],
        ],
      );
      assert.deepEqual(
        (await store.list({ statuses: ['running', 'compensating'], limit: 2, after: 's-1' })).map(
          (s) => s.sagaId,
        ),
        ['s-3', 's-5'],
      );
      assert.deepEqual(await store.list({ statuses: [] }), []);
    });

    it('refuses bad records and queries with InvalidOptionsError', async () => {
      const store = await open();
      const good = newRecord('ok');
      for (const bad of [
        { ...good, sagaId: '' },
        { ...good, sagaId: 'x'.repeat(201) },
        { ...good, status: 'sleeping' },
        { ...good, version: 2 },
        { ...good, steps: 'none' },
        { ...good, definition: '' },
      ]) {
        await assert.rejects(
          store.insert(bad as never),
          InvalidOptionsError,
          JSON.stringify(bad).slice(0, 80),
        );
      }
      await assert.rejects(
        store.update({ ...good, version: 1 }),
        InvalidOptionsError,
        'version 1 is no update',
      );
      await assert.rejects(store.get(''), InvalidOptionsError);
      await assert.rejects(store.list({ limit: 0 }), InvalidOptionsError);
      await assert.rejects(store.list({ statuses: ['asleep' as SagaStatus] }), InvalidOptionsError);
    });

    it('runs a saga to completion through the engine, logging each result', async () => {
      const store = await open();
      const { definition, effects } = tripSaga();
      const engine = new SagaEngine({
        store,
        definitions: [definition],
        clock: new VirtualClock({ now: T0 }),
      });
      const done = await engine.start(definition, 'trip-1', { traveller: 'ada' });
      assert.equal(done.status, 'completed');
      assert.deepEqual(
        done.steps.map((s) => [s.name, s.result]),
        [
          ['flight1', { booking: 'flight1-ref' }],
          ['flight2', { booking: 'flight2-ref' }],
          ['hotel', { booking: 'hotel-ref' }],
        ],
      );
      assert.deepEqual(await store.get('trip-1'), done);
      assert.deepEqual([...effects.keys()], ['trip-1:flight1', 'trip-1:flight2', 'trip-1:hotel']);
    });

    it('compensates exactly the steps completed before the failing one, last first', async () => {
      const store = await open();
      const { definition, calls } = tripSaga('hotel');
      const engine = new SagaEngine({
        store,
        definitions: [definition],
        clock: new VirtualClock({ now: T0 }),
      });
      const done = await engine.start(definition, 'trip-2', { traveller: 'ada' });
      assert.equal(done.status, 'compensated');
      assert.deepEqual(calls, [
        'do:flight1',
        'do:flight2',
        'do:hotel',
        'do:hotel',
        'undo:flight2',
        'undo:flight1',
      ]);
      assert.deepEqual(done.failure, {
        step: 'hotel',
        error: { name: 'Error', message: 'hotel is sold out' },
        attempts: 2,
      });
      assert.ok(done.steps.every((s) => s.undone?.by === 'undo'));
      assert.deepEqual(await store.get('trip-2'), done);
    });

    it('resumes a saga left mid-compensation by a crashed engine, undoing only what is left', async () => {
      const store = await open();
      const { definition, calls } = tripSaga();
      // What a crashed engine left: two steps done, the hotel failed, flight2 already undone.
      await store.insert(newRecord('trip-3'));
      await store.update({
        ...newRecord('trip-3', 'compensating'),
        version: 2,
        steps: [
          { name: 'flight1', result: { booking: 'flight1-ref' }, completedAt: T0 },
          {
            name: 'flight2',
            result: { booking: 'flight2-ref' },
            completedAt: T0,
            undone: { at: T0, by: 'undo' },
          },
        ],
        failure: { step: 'hotel', error: { name: 'Error', message: 'sold out' }, attempts: 3 },
      });
      await store.insert(newRecord('trip-4'));
      await store.insert(newRecord('trip-5', 'completed'));
      const engine = new SagaEngine({
        store,
        definitions: [definition],
        clock: new VirtualClock({ now: T0 }),
      });
      const report = await engine.recover();
      assert.deepEqual(
        report.resumed.map((s) => [s.sagaId, s.status]),
        [
          ['trip-3', 'compensated'],
          ['trip-4', 'completed'],
        ],
      );
      assert.deepEqual(
        calls.filter((c) => c.startsWith('undo')),
        ['undo:flight1'],
        'flight2 is not undone twice',
      );
      assert.deepEqual((await engine.recover()).resumed, [], 'nothing is left to resume');
    });

    it('stops for an operator when an undo gives up, and goes on once the operator resolves it', async () => {
      const store = await open();
      const { definition, calls } = tripSaga('hotel', 'flight2');
      const engine = new SagaEngine({
        store,
        definitions: [definition],
        clock: new VirtualClock({ now: T0 }),
      });
      const stuck = await engine.start(definition, 'trip-6', { traveller: 'ada' });
      assert.equal(stuck.status, 'needs-operator');
      assert.deepEqual(stuck.failedUndos, [
        { step: 'flight2', error: { name: 'Error', message: 'cannot cancel flight2-ref' }, attempts: 2 },
      ]);
      assert.ok(!calls.includes('undo:flight1'), 'the next stage waits for the operator');
      const restarted = new SagaEngine({
        store,
        definitions: [definition],
        clock: new VirtualClock({ now: T0 }),
      });
      const report = await restarted.recover();
      assert.deepEqual(
        report.needsOperator.map((a) => [a.sagaId, a.remaining]),
        [['trip-6', [['flight2'], ['flight1']]]],
      );
      const done = await restarted.resolveStep('trip-6', 'flight2', { note: 'refunded by phone' });
      assert.equal(done.status, 'compensated');
      assert.deepEqual(
        done.steps.map((s) => [s.name, s.undone?.by, s.undone?.note]),
        [
          ['flight1', 'undo', undefined],
          ['flight2', 'operator', 'refunded by phone'],
        ],
      );
      assert.deepEqual(await store.get('trip-6'), done);
    });
  });
}
