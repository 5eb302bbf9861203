import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type LeaseStore, MemoryLeaseStore } from '@stratus/coordination';
import { VirtualClock } from '@stratus/testkit';
import { liveWorkers, WorkerPresence } from './worker-presence.js';

const LEASE_MS = 9_000;

/** The store as one worker reaches it: `down` makes every call fail, as when the worker hangs or loses its network. */
function reachable(store: LeaseStore): { store: LeaseStore; down: boolean } {
  const link = { down: false, store };
  const up = () => {
    if (link.down) throw new Error('unreachable');
  };
  link.store = {
    kind: store.kind,
    async acquire(request) {
      up();
      return store.acquire(request);
    },
    async renew(...args) {
      up();
      return store.renew(...args);
    },
    async release(...args) {
      up();
      return store.release(...args);
    },
    async holders(...args) {
      up();
      return store.holders(...args);
    },
  };
  return link;
}

describe('WorkerPresence', () => {
  test('each running worker counts; one that stops counts no more', async () => {
    const clock = new VirtualClock();
    const store = new MemoryLeaseStore();
    const workers = [new WorkerPresence(store, clock, LEASE_MS), new WorkerPresence(store, clock, LEASE_MS)];
    assert.equal(await liveWorkers(store, clock), 0);
    for (const worker of workers) await worker.start();
    assert.equal(await liveWorkers(store, clock), 2);
    await clock.advance(5 * LEASE_MS);
    assert.equal(await liveWorkers(store, clock), 2, 'renewed while running');
    await workers[0]?.stop();
    assert.equal(await liveWorkers(store, clock), 1);
    await workers[1]?.stop();
    assert.equal(await liveWorkers(store, clock), 0);
  });

  test('a worker that dies stops counting within the lease, and counts again once it is back', async () => {
    const clock = new VirtualClock();
    const store = new MemoryLeaseStore();
    const link = reachable(store);
    const worker = new WorkerPresence(link.store, clock, LEASE_MS);
    await worker.start();
    assert.equal(await liveWorkers(store, clock), 1);
    link.down = true;
    await clock.advance(LEASE_MS);
    assert.equal(await liveWorkers(store, clock), 0, 'nothing renewed it');
    link.down = false;
    await clock.advance(LEASE_MS);
    assert.equal(await liveWorkers(store, clock), 1, 'it took a slot again');
    await worker.stop();
  });
});
