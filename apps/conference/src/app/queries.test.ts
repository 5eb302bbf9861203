import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seatTypesTtlMs } from './queries.js';

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
