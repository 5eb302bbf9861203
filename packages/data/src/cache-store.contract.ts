/**
 * The behaviour every CacheStore adapter must have, as one suite: call `cacheStoreContract` with a factory from
 * the adapter's test file. Entry deadlines are given explicitly (`now`), waits run on the virtual clock the
 * harness hands out; only lock expiry may take real time (Redis keeps lock deadlines itself).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomId } from '@stratus/core';
import { type VirtualClock, waitUntil } from '@stratus/testkit';
import type { CacheEntry, CacheStore, InvalidationMessage } from './store.js';

export interface StoreHarness {
  /** The store under test. */
  readonly store: CacheStore;
  /** A second instance on the same backplane (another process, as far as the store can tell). */
  readonly peer: CacheStore;
  /** The clock both stores time their waits with. */
  readonly clock: VirtualClock;
  /** Lets at least `ms` pass for the stores' lock expiry (virtual or real time). */
  lapse(ms: number): Promise<void>;
  close(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1);
const entry = (value: unknown, freshFor = 1_000, staleFor = 0, now = T0): CacheEntry => ({
  value,
  freshUntil: now + freshFor,
  staleUntil: now + freshFor + staleFor,
});
const me = { origin: 'me' };

export function cacheStoreContract(kind: string, open: () => Promise<StoreHarness>): void {
  describe(`CacheStore contract: ${kind}`, () => {
    let h: StoreHarness;
    let store: CacheStore;
    // Every test works on keys of its own, so tests never see each other's entries or locks.
    const key = () => `k-${randomId(4)}`;
    before(async () => {
      h = await open();
      store = h.store;
      await Promise.all([h.store.ready(), h.peer.ready()]);
    });
    after(() => h.close());

    it('returns undefined for a key never set', async () => {
      assert.equal(await store.get(key(), T0), undefined);
    });

    it('keeps values, objects included, until staleUntil', async () => {
      const k = key();
      const value = { id: 7, name: 'Ada', tags: ['x'], nested: { ok: true } };
      await store.set(k, entry(value, 1_000, 500), T0, me);
      assert.deepEqual(await store.get(k, T0), entry(value, 1_000, 500));
      assert.deepEqual((await h.peer.get(k, T0))?.value, value, 'visible to another instance');
      assert.deepEqual((await store.get(k, T0 + 1_200))?.value, value, 'stale but within grace');
      assert.equal(await store.get(k, T0 + 1_500), undefined, 'gone at staleUntil');
    });

    it('keeps negative entries of undefined and of null apart', async () => {
      const [a, b] = [key(), key()];
      const negative = (value: undefined | null): CacheEntry => ({ ...entry(value), negative: true });
      await store.set(a, negative(undefined), T0, me);
      await store.set(b, negative(null), T0, me);
      assert.deepEqual(await store.get(a, T0), negative(undefined));
      assert.deepEqual(await store.get(b, T0), negative(null));
    });

    it('deletes several keys at once', async () => {
      const [a, b, c] = [key(), key(), key()];
      for (const k of [a, b, c]) await store.set(k, entry(k), T0, me);
      await store.delete([a, b], me);
      assert.equal(await store.get(a, T0), undefined);
      assert.equal(await store.get(b, T0), undefined);
      assert.equal((await store.get(c, T0))?.value, c);
    });

    it('grants a key lock to one holder at a time, with growing fences', async () => {
      const k = key();
      const first = await store.tryLock(k, 60_000);
      assert.ok(first);
      assert.equal(await h.peer.tryLock(k, 60_000), undefined, 'held: another instance cannot take it');
      assert.equal(await store.tryLock(k, 60_000), undefined, 'not reentrant');
      const other = await store.tryLock(key(), 60_000);
      assert.ok(other && other.fence > first.fence);
      assert.notEqual(other.token, first.token);
    });

    it('writes a loaded entry only while the lock holds, then releases it', async () => {
      const k = key();
      const lock = await store.tryLock(k, 60_000);
      assert.ok(lock);
      assert.equal(await store.setIfLocked(lock, entry('loaded'), T0, me), true);
      assert.equal((await store.get(k, T0))?.value, 'loaded');
      assert.ok(await h.peer.tryLock(k, 60_000), 'released');
      assert.equal(await store.setIfLocked(lock, entry('again'), T0, me), false, 'no longer held');
      assert.equal((await store.get(k, T0))?.value, 'loaded');
    });

    it('releases without writing when given no entry', async () => {
      const k = key();
      const lock = await store.tryLock(k, 60_000);
      assert.ok(lock);
      assert.equal(await store.setIfLocked(lock, undefined, T0, me), true);
      assert.equal(await store.get(k, T0), undefined);
      assert.ok(await store.tryLock(k, 60_000), 'released');
    });

    it('fences off a load that began before a write or a delete', async () => {
      const [written, deleted] = [key(), key()];
      const beforeWrite = await store.tryLock(written, 60_000);
      const beforeDelete = await store.tryLock(deleted, 60_000);
      assert.ok(beforeWrite && beforeDelete);
      await h.peer.set(written, entry('new'), T0, me);
      await h.peer.delete([deleted], me);
      assert.equal(await store.setIfLocked(beforeWrite, entry('old'), T0, me), false);
      assert.equal(await store.setIfLocked(beforeDelete, entry('old'), T0, me), false);
      assert.equal((await store.get(written, T0))?.value, 'new');
      assert.equal(await store.get(deleted, T0), undefined);
    });

    it('lets a lock lapse after its ttl (its holder died), fencing off the old holder', async () => {
      const k = key();
      const dead = await store.tryLock(k, 40);
      assert.ok(dead);
      await h.lapse(60);
      const next = await h.peer.tryLock(k, 60_000);
      assert.ok(next, 'the lock lapsed');
      assert.equal(await store.setIfLocked(dead, entry('late'), T0, me), false);
      assert.equal(await h.peer.setIfLocked(next, entry('fresh'), T0, me), true);
      assert.equal((await store.get(k, T0))?.value, 'fresh');
    });

    it('extends a lock its holder still has, and not one it lost', async () => {
      const k = key();
      // Long enough that the extension surely comes first where the store times expiry in real time (Redis).
      const lock = await store.tryLock(k, 500);
      assert.ok(lock);
      assert.equal(await store.extendLock(lock, 60_000), true);
      await h.lapse(600);
      assert.equal(await h.peer.tryLock(k, 60_000), undefined, 'still held past the first ttl');
      await h.peer.delete([k], me);
      assert.equal(await store.extendLock(lock, 60_000), false, 'lost to the delete');
      assert.ok(await h.peer.tryLock(k, 60_000), 'and not taken back');
    });

    it('wakes waiters in other instances when the lock is released', async () => {
      for (const release of ['load', 'set', 'delete'] as const) {
        const k = key();
        const lock = await store.tryLock(k, 60_000);
        assert.ok(lock);
        let woken = false;
        // A long bound on the virtual clock, which does not move: only the release can wake the waiter.
        const waiting = h.peer.waitForUnlock(k, 600_000).then(() => {
          woken = true;
        });
        assert.equal(woken, false);
        if (release === 'load') await store.setIfLocked(lock, entry(1), T0, me);
        else if (release === 'set') await store.set(k, entry(2), T0, me);
        else await store.delete([k], me);
        await waitUntil(() => woken, `the waiter is woken by a release (${release})`);
        await waiting;
      }
    });

    it('bounds a wait nobody ends by its timeout', async () => {
      const k = key();
      assert.ok(await store.tryLock(k, 600_000));
      let woken = false;
      const waiting = h.peer.waitForUnlock(k, 100).then(() => {
        woken = true;
      });
      await h.clock.advance(99);
      assert.equal(woken, false);
      await h.clock.advance(1);
      await waiting;
      assert.equal(woken, true);
    });

    it('broadcasts set, delete and loaded keys to the other instances', async () => {
      const seen: InvalidationMessage[] = [];
      const stop = h.peer.onInvalidation((message) => {
        if (message.origin === 'writer') seen.push(message);
      });
      try {
        const [a, b, c, d] = [key(), key(), key(), key()];
        const writer = { origin: 'writer' };
        await store.set(a, entry(1), T0, writer);
        await store.delete([b, c], writer);
        const lock = await store.tryLock(d, 60_000);
        assert.ok(lock);
        await store.setIfLocked(lock, entry(3), T0, writer);
        const unlockOnly = await store.tryLock(key(), 60_000);
        assert.ok(unlockOnly);
        await store.setIfLocked(unlockOnly, undefined, T0, writer);
        await waitUntil(() => seen.length >= 3, 'three invalidations arrive');
        assert.deepEqual(
          seen.map((m) => [...m.keys]),
          [[a], [b, c], [d]],
        );
        // A release that wrote nothing changes no key, and a write may opt out: no invalidation for either
        // (checked after a later marker).
        await store.set(key(), entry(0), T0, { origin: 'writer', invalidate: false });
        const quiet = await store.tryLock(key(), 60_000);
        assert.ok(quiet);
        await store.setIfLocked(quiet, entry(0), T0, { origin: 'writer', invalidate: false });
        await store.set('marker', entry(0), T0, writer);
        await waitUntil(() => seen.length >= 4, 'the marker arrives');
        assert.deepEqual(seen[3]?.keys, ['marker']);
      } finally {
        stop();
      }
    });

    it('stops delivering to a listener that unsubscribed', async () => {
      const seen: string[] = [];
      const kept: string[] = [];
      const stop = h.peer.onInvalidation((m) => seen.push(...m.keys));
      const keep = h.peer.onInvalidation((m) => kept.push(...m.keys));
      stop();
      const k = key();
      await store.delete([k], me);
      await waitUntil(() => kept.includes(k), 'the remaining listener hears the delete');
      assert.deepEqual(seen, []);
      keep();
    });
  });
}
