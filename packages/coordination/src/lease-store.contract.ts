/**
 * The contract every LeaseStore passes (memory, SQLite, PostgreSQL, Redis): exclusive and counted grants, expiry,
 * renewal, release, and fencing tokens that only grow. Each adapter's test file calls `leaseStoreContract` with a
 * factory giving a fresh, empty store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import type { AcquireResult, LeaseStore } from './lease-store.js';

const T0 = 1_750_000_000_000;

function granted(result: AcquireResult) {
  assert.ok(result.acquired, `expected a grant, got ${JSON.stringify(result)}`);
  return result.grant;
}

export function leaseStoreContract(kind: string, open: () => Promise<LeaseStore>): void {
  describe(`LeaseStore contract: ${kind}`, () => {
    it('grants a free lease to one owner at a time, until it expires', async () => {
      const store = await open();
      const first = granted(await store.acquire({ name: 'job', owner: 'a', ttlMs: 1000, now: T0 }));
      assert.deepEqual({ ...first }, { name: 'job', owner: 'a', token: 1, expiresAt: T0 + 1000 });
      const refused = await store.acquire({ name: 'job', owner: 'b', ttlMs: 1000, now: T0 + 999 });
      assert.equal(refused.acquired, false);
      assert.deepEqual(refused.acquired ? [] : refused.holders.map((h) => ({ ...h })), [
        { owner: 'a', token: 1, expiresAt: T0 + 1000 },
      ]);
      const second = granted(await store.acquire({ name: 'job', owner: 'b', ttlMs: 500, now: T0 + 1000 }));
      assert.deepEqual({ ...second }, { name: 'job', owner: 'b', token: 2, expiresAt: T0 + 1500 });
      assert.deepEqual(
        (await store.holders('job', T0 + 1200)).map((h) => h.owner),
        ['b'],
      );
      assert.deepEqual(await store.holders('job', T0 + 1500), [], 'expired holders are not listed');
      assert.deepEqual(await store.holders('nobody-asked', T0), []);
    });

    it('extends the grant of an owner that acquires again, keeping its token', async () => {
      const store = await open();
      granted(await store.acquire({ name: 'job', owner: 'a', ttlMs: 1000, now: T0 }));
      const again = await store.acquire({ name: 'job', owner: 'a', ttlMs: 1000, now: T0 + 600 });
      assert.ok(again.acquired && again.renewed);
      assert.equal(again.grant.token, 1);
      assert.equal(again.grant.expiresAt, T0 + 1600);
      assert.equal(
        (await store.acquire({ name: 'job', owner: 'b', ttlMs: 1, now: T0 + 1500 })).acquired,
        false,
      );
    });

    it('renews only a live grant held with its token', async () => {
      const store = await open();
      const grant = granted(await store.acquire({ name: 'job', owner: 'a', ttlMs: 1000, now: T0 }));
      const renewed = await store.renew('job', 'a', grant.token, 1000, T0 + 900);
      assert.deepEqual({ ...renewed }, { name: 'job', owner: 'a', token: 1, expiresAt: T0 + 1900 });
      assert.equal(await store.renew('job', 'a', 7, 1000, T0 + 950), undefined, 'wrong token');
      assert.equal(await store.renew('job', 'b', 1, 1000, T0 + 950), undefined, 'not the owner');
      assert.equal(await store.renew('job', 'a', 1, 1000, T0 + 1900), undefined, 'expired');
      const taken = granted(await store.acquire({ name: 'job', owner: 'b', ttlMs: 1000, now: T0 + 2000 }));
      assert.equal(taken.token, 2);
      assert.equal(await store.renew('job', 'a', 1, 1000, T0 + 2001), undefined, 'taken over');
      assert.equal(await store.renew('other', 'a', 1, 1000, T0), undefined, 'no such lease');
    });

    it('releases a grant, and never hands out a token twice', async () => {
      const store = await open();
      const grant = granted(await store.acquire({ name: 'job', owner: 'a', ttlMs: 60_000, now: T0 }));
      assert.equal(await store.release('job', 'a', 5), false, 'wrong token');
      assert.equal(await store.release('job', 'b', grant.token), false, 'not the owner');
      assert.equal(await store.release('job', 'a', grant.token), true);
      assert.equal(await store.release('job', 'a', grant.token), false, 'already released');
      const next = granted(await store.acquire({ name: 'job', owner: 'a', ttlMs: 1000, now: T0 + 1 }));
      assert.equal(next.token, 2, 'the same owner gets a new token after releasing');
      const other = granted(await store.acquire({ name: 'other-job', owner: 'a', ttlMs: 1000, now: T0 }));
      assert.equal(other.token, 1, 'each name has its own tokens');
    });

    it('admits up to `limit` holders (a semaphore), soonest expiry listed first', async () => {
      const store = await open();
      const tokens: number[] = [];
      for (const [i, owner] of ['a', 'b', 'c'].entries()) {
        const grant = granted(
          await store.acquire({ name: 'pool', owner, ttlMs: 1000 - i * 100, now: T0, limit: 3 }),
        );
        tokens.push(grant.token);
      }
      assert.deepEqual(tokens, [1, 2, 3]);
      const refused = await store.acquire({ name: 'pool', owner: 'd', ttlMs: 1000, now: T0, limit: 3 });
      assert.equal(refused.acquired, false);
      assert.deepEqual(refused.acquired ? [] : refused.holders.map((h) => h.owner), ['c', 'b', 'a']);
      await store.release('pool', 'b', 2);
      const d = granted(await store.acquire({ name: 'pool', owner: 'd', ttlMs: 1000, now: T0, limit: 3 }));
      assert.equal(d.token, 4);
      assert.equal((await store.holders('pool', T0 + 850)).length, 2, 'c expired at +800');
    });

    it('counts every live holder of a name acquired with different limits', async () => {
      const store = await open();
      granted(await store.acquire({ name: 'mixed', owner: 'a', ttlMs: 1000, now: T0 }));
      const b = granted(await store.acquire({ name: 'mixed', owner: 'b', ttlMs: 2000, now: T0, limit: 2 }));
      assert.equal(b.token, 2);
      const full = await store.acquire({ name: 'mixed', owner: 'c', ttlMs: 1000, now: T0, limit: 2 });
      assert.deepEqual(full.acquired ? [] : full.holders.map((h) => h.owner), ['a', 'b']);
      const one = await store.acquire({ name: 'mixed', owner: 'c', ttlMs: 1000, now: T0 + 1 });
      assert.equal(one.acquired, false, 'a limit of 1 sees both holders');
      assert.ok(await store.renew('mixed', 'a', 1, 1000, T0 + 500), 'the first holder renews');
      assert.equal(await store.release('mixed', 'a', 1), true);
      assert.deepEqual(
        (await store.holders('mixed', T0 + 600)).map((h) => ({ ...h })),
        [{ owner: 'b', token: 2, expiresAt: T0 + 2000 }],
      );
      const c = granted(await store.acquire({ name: 'mixed', owner: 'c', ttlMs: 1000, now: T0 + 2000 }));
      assert.equal(c.token, 3, 'a limit of 1 again after the semaphore holders expired');
    });

    it('gives a contested lease to exactly one of many concurrent acquirers (and a semaphore to exactly `limit`)', async () => {
      const store = await open();
      for (const limit of [1, 3]) {
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.acquire({ name: `race-${limit}`, owner: `o${i}`, ttlMs: 10_000, now: T0, limit }),
          ),
        );
        const winners = outcomes.filter((o) => o.acquired);
        assert.equal(winners.length, limit);
        assert.deepEqual(
          winners.map((o) => (o.acquired ? o.grant.token : 0)).sort((x, y) => x - y),
          Array.from({ length: limit }, (_, i) => i + 1),
        );
      }
    });

    it('refuses bad requests with InvalidOptionsError', async () => {
      const store = await open();
      const good = { name: 'job', owner: 'a', ttlMs: 1000, now: T0 };
      for (const bad of [
        { ...good, name: '' },
        { ...good, name: 'x'.repeat(201) },
        { ...good, owner: 42 },
        { ...good, ttlMs: 0 },
        { ...good, ttlMs: Number.NaN },
        { ...good, now: -1 },
        { ...good, limit: 0 },
        { ...good, limit: 1.5 },
      ]) {
        await assert.rejects(store.acquire(bad as never), InvalidOptionsError, JSON.stringify(bad));
      }
      await assert.rejects(store.renew('job', 'a', 0, 1000, T0), InvalidOptionsError);
      await assert.rejects(store.release('', 'a', 1), InvalidOptionsError);
    });
  });
}
