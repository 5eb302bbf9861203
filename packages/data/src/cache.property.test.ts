/**
 * Property: when every write goes through `invalidateAfter`, a read on any instance returns what the system of
 * record holds, whatever the interleaving of reads, writes, deletes, evictions and passing time. Two instances
 * share a memory store, so this covers the store tier and the invalidation broadcast between local tiers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import fc from 'fast-check';
import { cacheAside } from './cache.js';
import { MemoryCacheStore } from './memory-store.js';

type Op =
  | { kind: 'read'; instance: 0 | 1; key: string }
  | { kind: 'write'; instance: 0 | 1; key: string; value: number | null }
  | { kind: 'evict'; instance: 0 | 1; key: string }
  | { kind: 'wait'; ms: number };

const key = fc.constantFrom('a', 'b', 'c');
const instance = fc.constantFrom<0 | 1>(0, 1);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('read' as const), instance, key }),
  fc.record({
    kind: fc.constant('write' as const),
    instance,
    key,
    value: fc.option(fc.integer({ min: 0, max: 99 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant('evict' as const), instance, key }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 2_000 }) }),
);

describe('cacheAside property', () => {
  it('reads on any instance return the system of record when writes invalidate after writing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.boolean(), async (ops, negative) => {
        const clock = new VirtualClock();
        const store = new MemoryCacheStore({ clock });
        const options = { clock, store, ttlMs: 1_000, local: { maxEntries: 2 } };
        const caches = [cacheAside(options), cacheAside(options)] as const;
        const db = new Map<string, number | null>();
        for (const step of ops) {
          if (step.kind === 'wait') await clock.advance(step.ms);
          else if (step.kind === 'evict') await store.delete([step.key], { origin: 'operator' });
          else if (step.kind === 'write') {
            await caches[step.instance].invalidateAfter(() => {
              db.set(step.key, step.value);
            }, step.key);
          } else {
            const read = await caches[step.instance].getOrLoad(
              step.key,
              () => db.get(step.key) ?? null,
              negative ? { negativeTtlMs: 500 } : undefined,
            );
            assert.equal(read, db.get(step.key) ?? null);
          }
        }
        for (const cache of caches) cache.close();
      }),
      { numRuns: 200 },
    );
  });
});
