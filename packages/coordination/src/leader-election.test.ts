import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { LeaseLostError } from './errors.js';
import {
  LeaderElection,
  type LeaderElectionEvent,
  type LeaderElectionOptions,
  type LeadershipTerm,
} from './leader-election.js';
import type { LeaseStore } from './lease-store.js';
import { MemoryLeaseStore } from './memory-lease-store.js';

const T0 = 1_750_000_000_000;

/** A memory store that can be cut off from one candidate, as a network partition would. */
function partitionable(store: LeaseStore) {
  const cut = new Set<string>();
  const guard = <T>(owner: string, call: () => Promise<T>) =>
    cut.has(owner) ? Promise.reject(new Error(`${owner} is partitioned`)) : call();
  const wrapped: LeaseStore = {
    kind: 'partitionable',
    acquire: (request) => guard(request.owner, () => store.acquire(request)),
    renew: (name, owner, token, ttlMs, now) =>
      guard(owner, () => store.renew(name, owner, token, ttlMs, now)),
    release: (name, owner, token) => guard(owner, () => store.release(name, owner, token)),
    holders: (name, now) => store.holders(name, now),
  };
  return { store: wrapped, cut };
}

function setup(count: number, options: Partial<LeaderElectionOptions> = {}) {
  const clock = new VirtualClock({ now: T0 });
  const memory = new MemoryLeaseStore();
  const { store, cut } = partitionable(memory);
  const events: LeaderElectionEvent[] = [];
  const candidates = Array.from({ length: count }, (_, i) => {
    const election = new LeaderElection({
      store,
      name: 'projector',
      candidateId: `c${i}`,
      leaseMs: 3000,
      clock,
      ...options,
    });
    election.events.on((event) => events.push(event));
    return election;
  });
  const leaders = () => candidates.filter((c) => c.isLeader).map((c) => c.candidateId);
  return { clock, memory, cut, events, candidates, leaders };
}

describe('LeaderElection', () => {
  it('elects one candidate, runs its work with the term, and hands over promptly on stop', async () => {
    const { clock, events, candidates, leaders } = setup(3);
    const terms: [string, LeadershipTerm][] = [];
    for (const c of candidates) c.onElected((term) => void terms.push([c.candidateId, term]));
    for (const c of candidates) c.start();
    await clock.advance(0);
    assert.deepEqual(leaders(), ['c0']);
    assert.equal(terms.length, 1);
    assert.equal(terms[0]?.[1].token, 1);
    assert.equal((await candidates[2]?.leader())?.owner, 'c0', 'anyone can ask who leads');

    await clock.advance(10_000);
    assert.deepEqual(leaders(), ['c0'], 'the leader keeps its lease by renewing');
    assert.equal(events.filter((e) => e.type === 'elected').length, 1);

    await candidates[0]?.stop();
    assert.equal(terms[0]?.[1].signal.aborted, true);
    const reason = terms[0]?.[1].signal.reason;
    assert.ok(reason instanceof LeaseLostError);
    assert.equal(reason.message, 'Lease "projector" lost: released');
    await clock.advance(1000);
    assert.equal(leaders().length, 1, 'a follower took over at its next try, not after the lease ran out');
    assert.equal(terms[1]?.[1].token, 2, 'the new term has a higher fencing token');
    for (const c of candidates) await c.stop();
  });

  it('deposes a leader cut off from the store before its lease expires, and only then elects another', async () => {
    const { clock, cut, events, candidates, leaders } = setup(2);
    for (const c of candidates) c.start();
    await clock.advance(0);
    const term = await candidates[0]!.waitForLeadership();
    cut.add('c0');
    await clock.advance(5000);
    const lost = events.find((e) => e.type === 'lost');
    const elected = events.filter((e) => e.type === 'elected')[1];
    assert.ok(lost?.type === 'lost' && lost.reason === 'expired');
    assert.ok(term.signal.aborted);
    // Its lease was last extended at +0 and runs to +3000; c0 stops 300 ms (its safety margin) before.
    assert.equal(lost.at - T0, 2700);
    assert.ok(elected?.type === 'elected' && elected.at - T0 >= 3000, 'c1 won only after the lease expired');
    assert.ok(lost.at < elected.at);
    assert.deepEqual(leaders(), ['c1']);
    assert.equal(elected.token, 2);
    assert.ok(events.some((e) => e.type === 'store-error' && e.leading));
    for (const c of candidates) await c.stop();
  });

  it('keeps the term through a store outage shorter than the lease (renewals retried sooner)', async () => {
    const { clock, cut, events, candidates } = setup(2);
    for (const c of candidates) c.start();
    await clock.advance(0);
    const term = await candidates[0]!.waitForLeadership();
    await clock.advance(900);
    cut.add('c0');
    await clock.advance(1200);
    cut.delete('c0');
    await clock.advance(5000);
    assert.equal(term.signal.aborted, false);
    assert.equal(candidates[0]?.isLeader, true);
    assert.ok(events.some((e) => e.type === 'store-error'));
    assert.equal(events.filter((e) => e.type === 'lost').length, 0);
    for (const c of candidates) await c.stop();
  });

  it('ends the term at once when a renewal is refused (someone else holds the lease)', async () => {
    const { clock, memory, events, candidates } = setup(1);
    const election = candidates[0]!;
    election.start();
    await clock.advance(0);
    const term = await election.waitForLeadership();
    // An operator (or a bug) force-releases the lease and another process takes it.
    assert.equal(await memory.release('projector', 'c0', term.token), true);
    assert.ok(
      (await memory.acquire({ name: 'projector', owner: 'intruder', ttlMs: 60_000, now: clock.now() }))
        .acquired,
    );
    await clock.advance(1000);
    assert.equal(term.signal.aborted, true);
    assert.ok(events.some((e) => e.type === 'lost' && e.reason === 'renewal-refused'));
    assert.equal(election.isLeader, false);
    await election.stop();
  });

  it('reports failing work as an event and keeps leading', async () => {
    const { clock, events, candidates } = setup(1);
    const election = candidates[0]!;
    election.onElected(() => {
      throw new Error('boom');
    });
    election.start();
    await clock.advance(0);
    const failed = events.find((e) => e.type === 'work-failed');
    assert.ok(failed?.type === 'work-failed' && (failed.error as Error).message === 'boom');
    assert.equal(election.isLeader, true);
    await election.stop();
  });

  it('refuses bad options', () => {
    const store = new MemoryLeaseStore();
    assert.throws(() => new LeaderElection({ store, name: '' }), /name/);
    assert.throws(() => new LeaderElection({ store: {} as LeaseStore, name: 'n' }), /store/);
    assert.throws(() => new LeaderElection({ store, name: 'n', leaseMs: 0 }), /leaseMs/);
    assert.throws(
      () => new LeaderElection({ store, name: 'n', leaseMs: 1000, renewEveryMs: 1000 }),
      /renewEveryMs/,
    );
    assert.throws(
      () => new LeaderElection({ store, name: 'n', leaseMs: 1000, renewEveryMs: 900, safetyMarginMs: 100 }),
      /safetyMarginMs/,
    );
  });
});
