import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LocalLru, type LruEntry } from './lru.js';

const forever = (value: unknown): LruEntry => ({ value, freshUntil: Infinity, staleUntil: Infinity });

describe('LocalLru', () => {
  it('evicts the least recently used entry when full', () => {
    const lru = new LocalLru(2);
    lru.set('a', forever(1));
    lru.set('b', forever(2));
    assert.equal(lru.get('a', 0)?.value, 1, 'touches a');
    lru.set('c', forever(3));
    assert.deepEqual(lru.keys(), ['a', 'c']);
    assert.equal(lru.get('b', 0), undefined);
    assert.equal(lru.size, 2);
  });

  it('replaces an entry in place without evicting another', () => {
    const lru = new LocalLru(2);
    lru.set('a', forever(1));
    lru.set('b', forever(2));
    lru.set('a', forever(10));
    assert.deepEqual(lru.keys(), ['b', 'a']);
    assert.equal(lru.get('a', 0)?.value, 10);
  });

  it('drops an entry once past its staleUntil, keeps it before', () => {
    const lru = new LocalLru(10);
    lru.set('a', { value: 1, freshUntil: 100, staleUntil: 200 });
    assert.equal(lru.get('a', 199)?.value, 1);
    assert.equal(lru.get('a', 200), undefined);
    assert.equal(lru.has('a'), false);
  });

  it('behaves like a reference model under any sequence of operations', () => {
    type Op = { kind: 'get' | 'set' | 'delete'; key: number };
    const op = fc.record({
      kind: fc.constantFrom('get', 'set', 'delete'),
      key: fc.integer({ min: 0, max: 7 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), (capacity, ops: Op[]) => {
        const lru = new LocalLru(capacity);
        let model: [string, number][] = []; // oldest first
        ops.forEach(({ kind, key }, i) => {
          const k = String(key);
          const at = model.findIndex(([mk]) => mk === k);
          if (kind === 'get') {
            const got = lru.get(k, 0)?.value;
            assert.equal(got, at >= 0 ? model[at]![1] : undefined);
            if (at >= 0) model = [...model.filter(([mk]) => mk !== k), model[at]!];
          } else if (kind === 'set') {
            lru.set(k, forever(i));
            model = model.filter(([mk]) => mk !== k);
            if (at < 0 && model.length >= capacity) model.shift();
            model.push([k, i]);
          } else {
            assert.equal(lru.delete(k), at >= 0);
            model = model.filter(([mk]) => mk !== k);
          }
          assert.deepEqual(
            lru.keys(),
            model.map(([mk]) => mk),
          );
        });
      }),
    );
  });
});
