import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PersistentMap } from './persistent-map.js';

type Operation =
  | { readonly op: 'set'; readonly key: string; readonly value: number }
  | { readonly op: 'delete'; readonly key: string };

const operations = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.string({ maxLength: 4 }), value: fc.integer() }),
    fc.record({ op: fc.constant('delete' as const), key: fc.string({ maxLength: 4 }) }),
  ),
  { maxLength: 200 },
);

function apply(operations: readonly Operation[]) {
  let persistent = PersistentMap.empty<number>();
  const plain = new Map<string, number>();
  const versions = [persistent];
  for (const operation of operations) {
    if (operation.op === 'set') {
      persistent = persistent.set(operation.key, operation.value);
      plain.set(operation.key, operation.value);
    } else {
      persistent = persistent.delete(operation.key);
      plain.delete(operation.key);
    }
    versions.push(persistent);
  }
  return { persistent, plain, versions };
}

const sorted = (entries: Iterable<[string, number]>) =>
  [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe('PersistentMap', () => {
  it('holds what a Map holds after the same sets and deletes', () => {
    fc.assert(
      fc.property(operations, (ops) => {
        const { persistent, plain } = apply(ops);
        assert.equal(persistent.size, plain.size);
        assert.deepEqual(sorted(persistent.entries()), sorted(plain.entries()));
        for (const [key, value] of plain) {
          assert.equal(persistent.get(key), value);
          assert.ok(persistent.has(key));
        }
        assert.equal(persistent.has('not a key at all'), false);
        assert.deepEqual([...persistent.keys()].sort(), [...plain.keys()].sort());
        assert.deepEqual(
          [...persistent.values()].sort((a, b) => a - b),
          [...plain.values()].sort((a, b) => a - b),
        );
      }),
    );
  });

  it('never changes a map it returned before', () => {
    fc.assert(
      fc.property(operations, (ops) => {
        const { versions } = apply(ops);
        const before = versions.map((version) => sorted(version));
        // Each version kept along the way still holds what a fresh replay of its prefix holds: the changes after
        // it did not reach it.
        for (let i = 0; i <= ops.length; i++)
          assert.deepEqual(sorted(apply(ops.slice(0, i)).persistent), before[i]);
      }),
      { numRuns: 50 },
    );
  });

  it('is deeply equal to another map exactly when their entries are equal, whatever the order of changes', () => {
    const a = PersistentMap.from([
      ['x', 1],
      ['y', 2],
    ]);
    const b = PersistentMap.empty<number>().set('y', 2).set('x', 1);
    assert.deepEqual(a, b);
    assert.notDeepStrictEqual(a, b.set('x', 3));
    assert.notDeepStrictEqual(a, b.delete('y'));
    assert.deepEqual(b.delete('y').delete('y'), b.delete('y'));
    assert.equal(b.delete('absent'), b, 'deleting an absent key returns the same map');
  });

  it('copies a small part of a large map per change', () => {
    const large = PersistentMap.from(
      Array.from({ length: 6400 }, (_, i) => [`reservation-${i}`, i] as const),
    );
    const changed = large.set('reservation-1', -1);
    const shared = changed.buckets.filter((bucket, i) => bucket === large.buckets[i]).length;
    assert.equal(shared, changed.buckets.length - 1, 'every bucket but one is shared');
    const largest = Math.max(...changed.buckets.map((bucket) => bucket?.size ?? 0));
    assert.ok(largest < 400, `the largest bucket holds ${largest} of 6400 entries`);
  });
});
