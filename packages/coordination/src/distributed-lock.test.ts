import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, OperationCancelledError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import {
  type DistributedLockOptions,
  type LockEvent,
  type LockHandle,
  mutex,
  semaphore,
} from './distributed-lock.js';
import { LeaseLostError, LockTimeoutError } from './errors.js';
import type { LeaseStore } from './lease-store.js';
import { MemoryLeaseStore } from './memory-lease-store.js';

const T0 = 1_750_000_000_000;

function setup(options: Partial<DistributedLockOptions> = {}) {
  const clock = new VirtualClock({ now: T0 });
  const store = new MemoryLeaseStore();
  const events: LockEvent[] = [];
  const make = (ownerPrefix: string, more: Partial<DistributedLockOptions> = {}) => {
    const lock = mutex({
      store,
      name: 'invoice-42',
      ttlMs: 3000,
      retryBackoff: constantBackoff(100),
      ownerPrefix,
      clock,
      ...options,
      ...more,
    });
    lock.events.on((event) => events.push(event));
    return lock;
  };
  return { clock, store, events, make };
}

describe('DistributedLock', () => {
  it('lets one holder in at a time; a waiter gets the lock, with a higher token, once it is released', async () => {
    const { clock, events, make } = setup();
    const a = make('a');
    const b = make('b');
    const held = await a.acquire();
    assert.equal(held.token, 1);
    assert.equal(await b.tryAcquire(), undefined);
    const got: { hold?: LockHandle } = {};
    // Read through a function: an assertion on got.hold would narrow it for the rest of the test.
    const hold = () => got.hold;
    const waiting = b.acquire().then((hold) => {
      got.hold = hold;
    });
    await clock.advance(250);
    assert.equal(hold(), undefined);
    assert.equal(await held.release(), true);
    assert.equal(held.signal.aborted, true, 'a released hold is over');
    await clock.advance(100);
    await waiting;
    assert.equal(hold()?.token, 2);
    const acquired = events.filter((e) => e.type === 'acquired');
    assert.deepEqual(
      acquired.map((e) => (e.type === 'acquired' ? [e.token, e.attempts] : [])),
      [
        [1, 1],
        [2, 4],
      ],
    );
    await hold()?.release();
  });

  it('renews a hold for as long as it is kept', async () => {
    const { clock, make } = setup();
    const held = await make('a').acquire();
    await clock.advance(10_000);
    assert.equal(held.held, true);
    assert.equal(await make('b').tryAcquire(), undefined);
    await held.release();
    assert.ok(await make('b').tryAcquire());
  });

  it('gives up waiting after waitMs, and at once when the signal aborts', async () => {
    const { clock, events, make } = setup();
    await make('a').acquire();
    const b = make('b');
    const timedOut = assert.rejects(b.acquire({ waitMs: 1000 }), (error: unknown) => {
      assert.ok(error instanceof LockTimeoutError);
      assert.equal(error.waitedMs, 1000);
      return true;
    });
    await clock.advance(1000);
    await timedOut;
    assert.ok(events.some((e) => e.type === 'timed-out'));
    const controller = new AbortController();
    const aborted = assert.rejects(b.acquire({ signal: controller.signal }), OperationCancelledError);
    await clock.advance(150);
    controller.abort();
    await aborted;
  });

  it("aborts a holder's signal when it can no longer renew, before anyone else can get the lock", async () => {
    const { clock, store, events, make } = setup();
    let partitioned = false;
    const flaky: LeaseStore = {
      kind: 'flaky',
      acquire: (request) => store.acquire(request),
      renew: (...args) => (partitioned ? Promise.reject(new Error('unreachable')) : store.renew(...args)),
      release: (...args) => store.release(...args),
      holders: (...args) => store.holders(...args),
    };
    const held = await make('a', { store: flaky }).acquire();
    partitioned = true;
    const b = make('b');
    const got: { hold?: LockHandle } = {};
    // Read through a function: an assertion on got.hold would narrow it for the rest of the test.
    const hold = () => got.hold;
    const waiting = b.acquire({ waitMs: 10_000 }).then((hold) => {
      got.hold = hold;
    });
    await clock.advance(2700);
    assert.equal(held.signal.aborted, true, 'lost 300 ms (the safety margin) before the lease ends');
    assert.ok(held.signal.reason instanceof LeaseLostError);
    assert.equal(hold(), undefined, 'nobody else holds it yet');
    await clock.advance(400);
    await waiting;
    assert.equal(hold()?.token, 2);
    assert.ok(events.some((e) => e.type === 'lost' && e.reason === 'expired'));
    assert.ok(events.some((e) => e.type === 'renewal-error'));
  });

  it('admits up to `limit` holders as a semaphore, and `using` releases after the work (also on failure)', async () => {
    const clock = new VirtualClock({ now: T0 });
    const lock = semaphore({
      store: new MemoryLeaseStore(),
      name: 'exports',
      limit: 3,
      retryBackoff: constantBackoff(10),
      clock,
    });
    let inside = 0;
    let most = 0;
    const jobs = Array.from({ length: 7 }, (_, i) =>
      lock.using(async (hold) => {
        inside++;
        most = Math.max(most, inside);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 100));
        inside--;
        if (i === 6) throw new Error('job 6 failed');
        return hold.token;
      }),
    );
    const settled = Promise.allSettled(jobs);
    for (let i = 0; i < 20; i++) await clock.advance(50);
    const outcomes = await settled;
    assert.equal(most, 3);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 6);
    assert.equal(outcomes.filter((o) => o.status === 'rejected').length, 1);
    assert.ok(await lock.tryAcquire(), 'every slot was given back');
  });

  it('refuses bad options', () => {
    const store = new MemoryLeaseStore();
    assert.throws(() => mutex({ store, name: '' }), /name/);
    assert.throws(() => mutex({ store: {} as LeaseStore, name: 'n' }), /store/);
    assert.throws(() => mutex({ store, name: 'n', ttlMs: 0 }), /ttlMs/);
    assert.throws(() => semaphore({ store, name: 'n', limit: 0 }), /limit/);
    assert.throws(() => semaphore({ store, name: 'n' } as never), /limit/);
    assert.throws(() => mutex({ store, name: 'n', waitMs: -1 }), /waitMs/);
  });
});
