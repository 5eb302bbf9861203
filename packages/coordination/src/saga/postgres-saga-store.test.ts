import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools, withHostilePgTypes } from '@stratus/testkit';
import type pg from 'pg';
import { PostgresSagaStore } from './postgres-saga-store.js';
import { sagaStoreContract } from './saga-store.contract.js';
import type { SagaRecord, SagaStatus } from './saga-store.js';

const suite = await postgresForSuite('coordination-sagas');
let schemas = 0;
const T0 = 1_750_000_000_000;

describe('PostgresSagaStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  sagaStoreContract(
    'postgres',
    async () => new PostgresSagaStore({ pool: newPool(), schema: `saga_${++schemas}` }),
  );

  it("reads the same sagas whatever pg's process-wide type parsers are", async () => {
    const record = (sagaId: string, status: SagaStatus, version: number): SagaRecord => ({
      sagaId,
      definition: 'trip',
      input: { traveller: 'ada', legs: ['SEA-LHR'] },
      status,
      steps: [],
      version,
      createdAt: T0,
      updatedAt: T0 + version,
    });
    const run = async () => {
      const store = new PostgresSagaStore({ pool: newPool(), schema: `saga_${++schemas}` });
      await store.insert(record('s-1', 'running', 1));
      await store.insert(record('s-2', 'running', 1));
      await store.update(record('s-2', 'completed', 2));
      return {
        one: await store.get('s-1'),
        running: await store.list({ statuses: ['running'] }),
        all: await store.list(),
      };
    };
    const expected = await run();
    assert.deepEqual(expected.one, record('s-1', 'running', 1));
    assert.deepEqual(await withHostilePgTypes(run), expected);
  });

  it('validates its options', () => {
    assert.throws(() => new PostgresSagaStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresSagaStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
