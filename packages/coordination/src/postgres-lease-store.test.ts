import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools, withHostilePgTypes } from '@stratus/testkit';
import type pg from 'pg';
import { leaseStoreContract } from './lease-store.contract.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';

const suite = await postgresForSuite('coordination-leases');
let schemas = 0;
const T0 = 1_700_000_000_000;

describe('PostgresLeaseStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  leaseStoreContract(
    'postgres',
    async () => new PostgresLeaseStore({ pool: newPool(), schema: `lease_${++schemas}` }),
  );

  it('answers every acquisition while holders release at the same time', async () => {
    // Eight callers take and give back one lease as fast as they can (found by the coordination bench: an
    // acquisition that counted a holder who released before it listed them came back with no row at all).
    const store = new PostgresLeaseStore({ pool: newPool(), schema: `lease_${++schemas}` });
    const tokens: number[] = [];
    let refused = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, caller) => {
        for (let i = 0; i < 25; ) {
          const result = await store.acquire({
            name: 'busy',
            owner: `c${caller}-${i}`,
            ttlMs: 10_000,
            now: T0,
          });
          if (!result.acquired) {
            refused++;
            continue;
          }
          tokens.push(result.grant.token);
          assert.equal(await store.release('busy', result.grant.owner, result.grant.token), true);
          i++;
        }
      }),
    );
    assert.equal(new Set(tokens).size, 200, 'every grant has a token of its own');
    assert.ok(refused > 0, 'the callers did contend');
  });

  it("reads the same leases whatever pg's process-wide type parsers are", async () => {
    // A schema a run, so both runs hand out the same tokens.
    const run = async () => {
      const store = new PostgresLeaseStore({ pool: newPool(), schema: `lease_${++schemas}` });
      const first = await store.acquire({ name: 'shared', owner: 'a', ttlMs: 10_000, now: T0, limit: 2 });
      const second = await store.acquire({ name: 'shared', owner: 'b', ttlMs: 5_000, now: T0 + 1, limit: 2 });
      const refused = await store.acquire({
        name: 'shared',
        owner: 'c',
        ttlMs: 10_000,
        now: T0 + 2,
        limit: 2,
      });
      const renewed = await store.acquire({
        name: 'shared',
        owner: 'a',
        ttlMs: 20_000,
        now: T0 + 3,
        limit: 2,
      });
      return { first, second, refused, renewed, holders: await store.holders('shared', T0 + 4) };
    };
    const expected = await run();
    assert.deepEqual(expected.refused, {
      acquired: false,
      holders: [
        { owner: 'b', token: 2, expiresAt: T0 + 5_001 },
        { owner: 'a', token: 1, expiresAt: T0 + 10_000 },
      ],
    });
    assert.deepEqual(await withHostilePgTypes(run), expected);
  });

  it('validates its options', () => {
    assert.throws(() => new PostgresLeaseStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresLeaseStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
