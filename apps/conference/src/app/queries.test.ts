import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DocumentReader, DocumentSlice } from '@stratus/eventsourcing';
import { VirtualClock } from '@stratus/testkit';
import { PUBLISHED_CONFERENCE } from '../read-models/conference-view.js';
import { documentQueries, type PageCursor, seatTypesTtlMs } from './queries.js';

const seats = (...available: number[]) => available.map((count) => ({ available: count }));

describe('seatTypesTtlMs (the Journey caching rule)', () => {
  test('5 minutes when every type has more than 200 seats or none left', () => {
    assert.equal(seatTypesTtlMs(seats(201, 0, 5000)), 300_000);
    assert.equal(seatTypesTtlMs(seats(0, -3)), 300_000);
    assert.equal(seatTypesTtlMs([]), 300_000);
  });
  test('not cached when any type has 1 to 29 seats', () => {
    assert.equal(seatTypesTtlMs(seats(1, 500)), 0);
    assert.equal(seatTypesTtlMs(seats(29, 50)), 0);
  });
  test('20 seconds when any type has 30 to 99 seats', () => {
    assert.equal(seatTypesTtlMs(seats(30, 500)), 20_000);
    assert.equal(seatTypesTtlMs(seats(99, 0)), 20_000);
  });
  test('1 minute otherwise (100 to 200 seats somewhere)', () => {
    assert.equal(seatTypesTtlMs(seats(100, 500)), 60_000);
    assert.equal(seatTypesTtlMs(seats(200)), 60_000);
  });
});

describe('publishedConferences', () => {
  /** A view of `count` published conferences (ids c00, c01...) that counts the documents each find reads. */
  function publishedView(count: number) {
    const ids = Array.from({ length: count }, (_, i) => `c${String(i).padStart(2, '0')}`);
    const read: number[] = [];
    const reader: DocumentReader = {
      get: async () => undefined,
      async find<T>(collection: string, _lookup?: string, slice?: DocumentSlice) {
        assert.equal(collection, PUBLISHED_CONFERENCE);
        assert.ok(slice, 'a page is read as a slice, never the whole collection');
        const { before, after, limit } = slice;
        const part =
          before === undefined
            ? ids.filter((id) => after === undefined || id > after).slice(0, limit)
            : ids.filter((id) => id < before).slice(-limit);
        read.push(part.length);
        return part.map((id) => ({ id })) as T[];
      },
    };
    return { queries: documentQueries(reader, reader, new VirtualClock()), read };
  }

  test('pages by cursor both ways, reading the page and at most two documents more', async () => {
    const { queries, read } = publishedView(45);
    const page = async (cursor: PageCursor) => {
      read.length = 0;
      const { items, next, previous } = await queries.publishedConferences(cursor, 20);
      assert.ok(read.reduce((sum, n) => sum + n, 0) <= 22, `read ${read.join('+')}`);
      return { ids: items.map((item) => item.id).join(), next, previous };
    };
    const first = await page({});
    assert.deepEqual(first, { ids: ids(0, 20), next: 'c19', previous: undefined });
    const second = await page({ after: 'c19' });
    assert.deepEqual(second, { ids: ids(20, 40), next: 'c39', previous: 'c20' });
    const third = await page({ after: 'c39' });
    assert.deepEqual(third, { ids: ids(40, 45), next: undefined, previous: 'c40' });
    assert.deepEqual(await page({ before: 'c40' }), second);
    assert.deepEqual(await page({ before: 'c20' }), first);
    assert.deepEqual(await page({ after: 'c44' }), { ids: '', next: undefined, previous: 'c44' });
  });

  test('an empty list has no other page', async () => {
    const { queries } = publishedView(0);
    assert.deepEqual(await queries.publishedConferences({}, 20), { items: [] });
  });
});

function ids(from: number, to: number): string {
  return Array.from({ length: to - from }, (_, i) => `c${String(from + i).padStart(2, '0')}`).join();
}
