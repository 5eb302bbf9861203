import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DocumentReader } from '@stratus/eventsourcing';
import { VirtualClock } from '@stratus/testkit';
import { DocumentWaits } from './waiting.js';

/** Documents in a map, counting reads; `hold` makes the next read wait until released. */
function countingReader(docs: Map<string, unknown>) {
  const state = { reads: 0, hold: undefined as Promise<void> | undefined };
  const reader: DocumentReader = {
    async get<T>(collection: string, id: string) {
      state.reads++;
      const doc = docs.get(`${collection}/${id}`) as T | undefined;
      if (state.hold !== undefined) await state.hold;
      return doc;
    },
    async find() {
      return [];
    },
  };
  return { reader, state };
}

describe('DocumentWaits', () => {
  it('with cacheDocuments, reads a document once until it changes (a missing one too)', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader, state } = countingReader(docs);
    const waits = new DocumentWaits(new VirtualClock(), 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    assert.deepEqual(await tracked.get('order', '1'), { status: 'pending' });
    assert.deepEqual(await tracked.get('order', '1'), { status: 'pending' });
    assert.equal(await tracked.get('order', '2'), undefined);
    assert.equal(await tracked.get('order', '2'), undefined);
    assert.equal(state.reads, 2);
    docs.set('order/1', { status: 'reserved' });
    docs.set('order/2', { status: 'pending' });
    waits.changed([
      { collection: 'order', id: '1' },
      { collection: 'order', id: '2' },
    ]);
    assert.deepEqual(await tracked.get('order', '1'), { status: 'reserved' });
    assert.deepEqual(await tracked.get('order', '2'), { status: 'pending' });
    assert.equal(state.reads, 4);
  });

  it('forgets every cached document and wakes every waiter when changes may have gone unreported', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader, state } = countingReader(docs);
    const clock = new VirtualClock();
    const waits = new DocumentWaits(clock, 60_000, { cacheDocuments: true });
    const tracked = waits.track(reader);
    await tracked.get('order', '1');
    const reserved = waits.waitFor(async () => {
      const order = await tracked.get<{ status: string }>('order', '1');
      return order?.status === 'reserved' ? order : undefined;
    }, 120_000);
    docs.set('order/1', { status: 'reserved' });
    waits.changedAll();
    assert.deepEqual(await reserved, { status: 'reserved' });
    assert.equal(state.reads, 2, 'the cached read, then one after the cache was forgotten');
  });

  it('takes the content a change announces instead of reading the document again', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader, state } = countingReader(docs);
    const waits = new DocumentWaits(new VirtualClock(), 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    await tracked.get('order', '1');
    waits.changed([
      { collection: 'order', id: '1', doc: { status: 'reserved' } },
      { collection: 'order', id: '2', deleted: true },
      { collection: 'order', id: '3' },
    ]);
    assert.deepEqual(await tracked.get('order', '1'), { status: 'reserved' });
    assert.equal(await tracked.get('order', '2'), undefined);
    assert.equal(state.reads, 1, 'announced contents are not read');
    await tracked.get('order', '3');
    assert.equal(state.reads, 2, 'a change without content is read');
    waits.unheard();
    waits.changed([{ collection: 'order', id: '1', doc: { status: 'confirmed' } }]);
    await tracked.get('order', '1');
    assert.equal(state.reads, 3, 'nothing is cached while unheard, announced or not');
  });

  it('knows a document said to be absent missing until a change brings it, without reading it', async () => {
    const docs = new Map<string, unknown>();
    const { reader, state } = countingReader(docs);
    const waits = new DocumentWaits(new VirtualClock(), 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    waits.absent('order', '9');
    assert.equal(await tracked.get('order', '9'), undefined);
    waits.changed([{ collection: 'order', id: '9', doc: { status: 'pending' } }]);
    assert.deepEqual(await tracked.get('order', '9'), { status: 'pending' });
    assert.equal(state.reads, 0);
    waits.unheard();
    waits.absent('order', '10');
    await tracked.get('order', '10');
    assert.equal(state.reads, 1, 'not while changes may go unheard');
  });

  it('caches nothing while changes may go unheard, and again once they are heard', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader, state } = countingReader(docs);
    const waits = new DocumentWaits(new VirtualClock(), 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    await tracked.get('order', '1');
    waits.unheard();
    assert.deepEqual(await tracked.get('order', '1'), { status: 'pending' });
    // A change nobody reports: each read while unheard goes to the store and sees it.
    docs.set('order/1', { status: 'reserved' });
    assert.deepEqual(await tracked.get('order', '1'), { status: 'reserved' });
    assert.equal(state.reads, 3, 'no read was served from the cache while unheard');
    waits.hearingAgain();
    await tracked.get('order', '1');
    await tracked.get('order', '1');
    assert.equal(state.reads, 4, 'cached again once changes are heard');
  });

  it('does not keep a read that a change overtook', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader, state } = countingReader(docs);
    const waits = new DocumentWaits(new VirtualClock(), 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    let release!: () => void;
    state.hold = new Promise((resolve) => {
      release = resolve;
    });
    const slow = tracked.get('order', '1');
    docs.set('order/1', { status: 'reserved' });
    waits.changed([{ collection: 'order', id: '1' }]);
    state.hold = undefined;
    release();
    assert.deepEqual(await slow, { status: 'pending' });
    assert.deepEqual(await tracked.get('order', '1'), { status: 'reserved' });
    assert.equal(state.reads, 2);
  });

  it('passes a find on with its lookup and slice', async () => {
    const asked: unknown[] = [];
    const reader: DocumentReader = {
      get: async () => undefined,
      async find<T>(...args: unknown[]) {
        asked.push(args);
        return [{ id: 'c2' }] as T[];
      },
    };
    const tracked = new DocumentWaits(new VirtualClock(), 25, { cacheDocuments: true }).track(reader);
    assert.deepEqual(await tracked.find('conference', undefined, { limit: 2, after: 'c1' }), [{ id: 'c2' }]);
    assert.deepEqual(asked, [['conference', undefined, { limit: 2, after: 'c1' }]]);
  });

  it('reads every time without cacheDocuments', async () => {
    const { reader, state } = countingReader(new Map([['order/1', {}]]));
    const tracked = new DocumentWaits(new VirtualClock(), 25).track(reader);
    await tracked.get('order', '1');
    await tracked.get('order', '1');
    assert.equal(state.reads, 2);
  });

  it('wakes a waiting check when a document it read changes', async () => {
    const docs = new Map<string, unknown>([['order/1', { status: 'pending' }]]);
    const { reader } = countingReader(docs);
    const clock = new VirtualClock();
    const waits = new DocumentWaits(clock, 250, { cacheDocuments: true });
    const tracked = waits.track(reader);
    const reserved = waits.waitFor(async () => {
      const order = await tracked.get<{ status: string }>('order', '1');
      return order?.status === 'reserved' ? order : undefined;
    }, 10_000);
    await new Promise((resolve) => setImmediate(resolve));
    docs.set('order/1', { status: 'reserved' });
    waits.changed([{ collection: 'order', id: '1' }]);
    assert.deepEqual(await reserved, { status: 'reserved' });
  });
});
