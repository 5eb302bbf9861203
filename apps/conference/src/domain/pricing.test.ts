import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from './errors.js';
import { fromCents, priceOrder, toCents } from './pricing.js';

const conferenceId = 'conference-1';
const prices = new Map([
  ['seat-a', 1510],
  ['seat-b', 999],
  ['seat-free', 0],
]);

describe('priceOrder', () => {
  test('prices 3 × 15.10 at 45.30, keeping the unit price and the seat type', () => {
    assert.deepEqual(priceOrder([{ seatTypeId: 'seat-a', quantity: 3 }], prices, conferenceId), {
      lines: [{ seatTypeId: 'seat-a', quantity: 3, unitPriceCents: 1510, lineTotalCents: 4530 }],
      totalCents: 4530,
      isFreeOfCharge: false,
    });
  });

  test('gives one line per requested seat type, in request order, zero quantities included', () => {
    const seats = [
      { seatTypeId: 'seat-b', quantity: 2 },
      { seatTypeId: 'seat-free', quantity: 0 },
      { seatTypeId: 'seat-a', quantity: 1 },
    ];
    assert.deepEqual(priceOrder(seats, prices, conferenceId), {
      lines: [
        { seatTypeId: 'seat-b', quantity: 2, unitPriceCents: 999, lineTotalCents: 1998 },
        { seatTypeId: 'seat-free', quantity: 0, unitPriceCents: 0, lineTotalCents: 0 },
        { seatTypeId: 'seat-a', quantity: 1, unitPriceCents: 1510, lineTotalCents: 1510 },
      ],
      totalCents: 3508,
      isFreeOfCharge: false,
    });
  });

  test('an order of free seats, or of nothing, is free of charge', () => {
    const free = priceOrder([{ seatTypeId: 'seat-free', quantity: 4 }], prices, conferenceId);
    assert.equal(free.totalCents, 0);
    assert.equal(free.isFreeOfCharge, true);
    assert.deepEqual(priceOrder([], prices, conferenceId), {
      lines: [],
      totalCents: 0,
      isFreeOfCharge: true,
    });
  });

  test('refuses a seat type the conference does not have, even with quantity 0', () => {
    const message = "Invalid seat type ID 'seat-x' for conference with ID 'conference-1'";
    for (const quantity of [0, 2]) {
      assert.throws(
        () => priceOrder([{ seatTypeId: 'seat-x', quantity }], prices, conferenceId),
        (error: unknown) =>
          error instanceof ValidationError && error.message === message && error.fields.seats === message,
      );
    }
  });

  test('the total is the sum of the lines, each its unit price times its quantity (property)', () => {
    const seatTypeIds = [...prices.keys()];
    fc.assert(
      fc.property(
        fc.array(
          fc.record(
            { seatTypeId: fc.constantFrom(...seatTypeIds), quantity: fc.nat(20) },
            { noNullPrototype: true },
          ),
        ),
        (seats) => {
          const { lines, totalCents, isFreeOfCharge } = priceOrder(seats, prices, conferenceId);
          assert.deepEqual(
            lines.map(({ seatTypeId, quantity }) => ({ seatTypeId, quantity })),
            seats,
          );
          for (const line of lines) {
            assert.equal(line.unitPriceCents, prices.get(line.seatTypeId));
            assert.equal(line.lineTotalCents, line.unitPriceCents * line.quantity);
          }
          assert.equal(
            totalCents,
            lines.reduce((sum, line) => sum + line.lineTotalCents, 0),
          );
          assert.equal(isFreeOfCharge, totalCents === 0);
        },
      ),
    );
  });
});

describe('toCents and fromCents', () => {
  test('convert prices with at most 2 decimals exactly, even those binary floats cannot hold', () => {
    assert.equal(toCents(15.1), 1510);
    assert.equal(toCents(0.29), 29); // 0.29 * 100 is 28.999999999999996
    assert.equal(toCents(9.99), 999);
    assert.equal(toCents(0), 0);
    assert.equal(toCents(50_000), 5_000_000);
    assert.equal(fromCents(1510), 15.1);
    assert.equal(fromCents(29), 0.29);
  });

  test("refuse more than 2 decimals (the Journey's rounded 9.987), negatives, over 50,000 and non-numbers", () => {
    for (const price of [9.987, 1.005, 0.001, -0.01, 50_000.01, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(
        () => toCents(price),
        (error: unknown) => error instanceof ValidationError && error.fields.price !== undefined,
        String(price),
      );
    }
  });

  test('round-trip every amount of cents in range (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5_000_000 }), (cents) => {
        assert.equal(toCents(fromCents(cents)), cents);
      }),
    );
  });
});
