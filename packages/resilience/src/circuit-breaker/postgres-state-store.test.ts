import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomId } from '@stratus/core';
import { postgresForSuite, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import {
  circuitStateStoreContract,
  type StorePair,
  state,
  T0,
  tracked,
} from './circuit-state-store.contract.js';
import { PostgresCircuitStateStore } from './postgres-state-store.js';

const database = await postgresForSuite('circuit-state-store');

describe('circuit state store contract: postgres', { skip: database.skip }, () => {
  const pools: pg.Pool[] = [];
  let pair: StorePair;
  const subscriptions: (() => Promise<void>)[] = [];
  before(() => {
    const pool = () => {
      const p = new pg.Pool({ connectionString: database.url, max: 4 });
      // pool.end() resolves before its sockets close, so dropping the database may still cut one off.
      p.on('error', () => {});
      pools.push(p);
      return p;
    };
    pair = {
      a: tracked(subscriptions, new PostgresCircuitStateStore({ pool: pool() })),
      b: tracked(subscriptions, new PostgresCircuitStateStore({ pool: pool() })),
    };
  });
  after(async () => {
    for (const off of subscriptions) await off();
    for (const p of pools) await p.end();
    await database.release();
  });
  circuitStateStoreContract(() => pair);

  it("reads the same records whatever pg's process-wide type parsers are", async () => {
    const store = new PostgresCircuitStateStore({ pool: pools[0] as pg.Pool });
    const report = (instanceId: string, expiresAt: number) => ({
      instanceId,
      failing: true,
      since: T0,
      expiresAt,
    });
    const run = async (k: string) => ({
      created: await store.compareAndSet(k, 0, state()),
      stale: await store.compareAndSet(k, 0, state({ state: 'closed' })),
      updated: await store.compareAndSet(k, 1, state({ trials: { t1: T0 + 100 } })),
      read: await store.read(k),
      first: await store.report(k, report('i1', T0 + 3000), T0),
      second: await store.report(k, report('i2', T0 + 1000), T0 + 10),
    });
    const expected = await run(`circuit-${randomId()}`);
    assert.deepEqual(expected.read, { ...state({ trials: { t1: T0 + 100 } }), version: 2 });
    assert.deepEqual(await withHostilePgTypes(() => run(`circuit-${randomId()}`)), expected);
  });

  it('rejects table and channel names that are not plain identifiers', () => {
    assert.throws(() => new PostgresCircuitStateStore({ pool: pools[0]!, table: 'x; DROP TABLE y' }));
    assert.throws(() => new PostgresCircuitStateStore({ pool: pools[0]!, channel: 'a"b' }));
    assert.doesNotThrow(() => new PostgresCircuitStateStore({ pool: pools[0]!, table: 'ops.breakers' }));
  });
});
