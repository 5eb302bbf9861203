import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HashRing, LeastRequests, RoundRobin } from './balancers.js';

interface Member {
  readonly id: string;
  readonly weight: number;
  inflight: number;
  up: boolean;
  available(): boolean;
}

function member(id: string, weight = 1): Member {
  return {
    id,
    weight,
    inflight: 0,
    up: true,
    available() {
      return this.up;
    },
  };
}

describe('balancers', () => {
  it('round robin interleaves weights 5, 1, 1 as nginx does', () => {
    const [a, b, c] = [member('a', 5), member('b'), member('c')];
    const rr = new RoundRobin([a, b, c]);
    const order = Array.from({ length: 7 }, () => rr.pick()?.id).join('');
    assert.equal(order, 'aabacaa');
  });

  it('round robin skips unavailable members and the one to skip, unless it is all there is', () => {
    const [a, b] = [member('a'), member('b')];
    const rr = new RoundRobin([a, b]);
    b.up = false;
    assert.deepEqual([rr.pick()?.id, rr.pick()?.id], ['a', 'a']);
    assert.equal(rr.pick(undefined, a)?.id, 'a');
    a.up = false;
    assert.equal(rr.pick(), undefined);
  });

  it('least requests picks the less loaded of two, by load per weight', () => {
    const [a, b] = [member('a'), member('b', 2)];
    a.inflight = 3;
    b.inflight = 5;
    // (3 + 1) / 1 = 4 against (5 + 1) / 2 = 3: b.
    const lr = new LeastRequests([a, b], () => 0);
    assert.equal(lr.pick()?.id, 'b');
  });

  it('a hash ring moves only about 1/n of the keys when a member goes', () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((id) => member(id));
    const ring = new HashRing(members);
    const keys = Array.from({ length: 5000 }, (_, i) => `key-${i}`);
    const before = keys.map((key) => ring.pick(key)?.id);
    const counts = new Map<string, number>();
    for (const id of before) counts.set(id as string, (counts.get(id as string) ?? 0) + 1);
    for (const count of counts.values()) assert.ok(Math.abs(count - 1000) < 200, JSON.stringify([...counts]));
    (members[2] as Member).up = false;
    const after = keys.map((key) => ring.pick(key)?.id);
    const moved = keys.filter((_, i) => before[i] !== after[i]).length;
    // Only c's keys move, and they spread over the others.
    assert.equal(moved, counts.get('c'));
    assert.ok(!after.includes('c'));
  });
});
