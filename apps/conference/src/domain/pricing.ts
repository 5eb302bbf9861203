/**
 * The Journey's PricingService without its read-model lookup: the caller passes the conference's seat prices in, so
 * pricing is a pure function. Money is integer cents, so line totals and totals are exact (no rounding step).
 */
import type { SeatOrderLine, SeatQuantity } from './contracts.js';
import { ValidationError } from './errors.js';

/** Unit prices in cents by seat type id: every seat type of one conference. */
export type SeatPrices = ReadonlyMap<string, number>;

/** What an order costs (the Journey's OrderTotal, as OrderTotalsCalculated carries it). */
export interface OrderTotals {
  readonly lines: readonly SeatOrderLine[];
  readonly totalCents: number;
  /** Nothing to pay: such an order is confirmed without a payment. */
  readonly isFreeOfCharge: boolean;
}

/**
 * Prices `seats` of the conference `conferenceId` (named only in the error): one line per requested seat type, in
 * request order, zero quantities included (line total 0) as in the Journey, whose form posts every seat type.
 */
export function priceOrder(
  seats: readonly SeatQuantity[],
  prices: SeatPrices,
  conferenceId: string,
): OrderTotals {
  const lines = seats.map(({ seatTypeId, quantity }): SeatOrderLine => {
    const unitPriceCents = prices.get(seatTypeId);
    if (unitPriceCents === undefined) {
      const message = `Invalid seat type ID '${seatTypeId}' for conference with ID '${conferenceId}'`;
      throw new ValidationError({ seats: message }, message);
    }
    return { seatTypeId, quantity, unitPriceCents, lineTotalCents: unitPriceCents * quantity };
  });
  const totalCents = lines.reduce((sum, line) => sum + line.lineTotalCents, 0);
  return { lines, totalCents, isFreeOfCharge: totalCents === 0 };
}

/** The Journey's seat price range, in currency units. */
const MAX_PRICE = 50_000;

/** A price in currency units (0 to 50,000, at most 2 decimals, e.g. from a form) as integer cents. */
export function toCents(price: number): number {
  const cents = Math.round(price * 100);
  // Exact for every number with at most 2 decimals (cents / 100 rounds to that same double) and false otherwise.
  if (!(price >= 0 && price <= MAX_PRICE) || cents / 100 !== price) {
    const message = `A price must be between 0 and ${MAX_PRICE} with at most 2 decimals.`;
    throw new ValidationError({ price: message }, message);
  }
  return cents;
}

/** Integer cents as a price in currency units (for display). */
export function fromCents(cents: number): number {
  return cents / 100;
}
