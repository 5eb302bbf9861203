/**
 * What the chaos test (scaled.chaos.test.ts) checks and reports once its registrations are over: the money and the
 * seats in the event store, every order's view, and the figures of the run.
 */
import assert from 'node:assert/strict';
import type { ApiClient } from './client.js';
import type { Ledger, OrderFate } from './ledger.js';
import { LEFT_UNPAID, type RegistrationRecord } from './load.js';
import type { ConferenceFixture } from './setup.js';

/**
 * Answers of 5xx may reach the generator this long after PostgreSQL is back: those given while it was down wait behind
 * the backlog the outage left, in the web processes and in the generator, on a busy box.
 */
export const OUTAGE_TAIL_MS = 3_000;

/** A registration the app accepted (answered 202 with the order's id). */
export type Accepted = RegistrationRecord & { readonly order: NonNullable<RegistrationRecord['order']> };

export interface Fault {
  readonly name: string;
  /** performance.now() when it was done, and when the part was back (restarted, or its replacement ready). */
  readonly at: number;
  backAt?: number;
}

/** Polls `check` every `everyMs` until it holds or `deadline` (performance.now()) passes; says which. */
export async function pollUntil(
  check: () => Promise<boolean>,
  deadline: number,
  everyMs: number,
): Promise<boolean> {
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export const toEpoch = (performanceMs: number) => performance.timeOrigin + performanceMs;
export const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

/** Every completed payment paid for its confirmed order, once, or is owed back; a confirmed order was paid once. */
export function assertPayments(ledger: Ledger): void {
  const kept = new Map<string, number>();
  for (const payment of ledger.payments.values()) {
    assert.ok(
      payment.completed <= 1 && payment.refundsDue <= 1,
      `payment ${payment.paymentId} recorded once`,
    );
    if (payment.completed === 1 && payment.refundsDue === 0)
      kept.set(payment.orderId, (kept.get(payment.orderId) ?? 0) + 1);
    if (payment.refundsDue === 1)
      assert.equal(payment.completed, 1, `${payment.paymentId}: only what was taken is owed`);
  }
  const wrong = [...ledger.orders.values()].filter((o) => (kept.get(o.orderId) ?? 0) !== o.confirmed);
  assert.deepEqual(
    wrong
      .slice(0, 10)
      .map((o) => `${o.orderId}: confirmed ${o.confirmed}, payments kept ${kept.get(o.orderId) ?? 0}`),
    [],
    `each confirmed order keeps exactly one payment, any other order none (${wrong.length} do not)`,
  );
}

/** Seats sold + seats left = the quota for every seat type, never fewer than none left, sold = confirmed. */
export function assertSeats(
  ledger: Ledger,
  conferences: readonly [ConferenceFixture, readonly number[]][],
): void {
  for (const [fixture, quotas] of conferences) {
    const seats = ledger.seats.get(fixture.conferenceId);
    assert.ok(seats, `the seats of ${fixture.slug} are in the store`);
    assert.deepEqual(
      seats.anomalies,
      [],
      `${fixture.slug}: every commit and cancellation was of a held reservation`,
    );
    assert.deepEqual([...seats.pending.keys()], [], `${fixture.slug}: no reservation still held`);
    const orders = [...ledger.orders.values()].filter((o) => o.conferenceId === fixture.conferenceId);
    const confirmed = orders.filter((o) => o.confirmed === 1);
    assert.deepEqual(
      [...seats.committed].sort(),
      confirmed.map((o) => o.orderId).sort(),
      `${fixture.slug}: the reservations committed are those of the confirmed orders`,
    );
    for (const [i, seatTypeId] of fixture.seatTypeIds.entries()) {
      const quota = quotas[i] as number;
      const sold: number = seats.sold.get(seatTypeId) ?? 0;
      const left: number = seats.remaining.get(seatTypeId) ?? 0;
      const confirmedSeats = confirmed
        .flatMap((o) => o.confirmedSeats)
        .filter((seat) => seat.seatTypeId === seatTypeId)
        .reduce((sum, seat) => sum + seat.quantity, 0);
      const what = `${fixture.slug} seat type ${i}`;
      assert.equal(seats.quota.get(seatTypeId), quota, `${what}: the quota`);
      assert.ok((seats.fewestRemaining.get(seatTypeId) ?? 0) >= 0, `${what}: never oversold`);
      assert.equal(sold, confirmedSeats, `${what}: seats sold = seats of the confirmed orders`);
      assert.equal(sold + left, quota, `${what}: sold ${sold} + left ${left} = quota ${quota}`);
    }
  }
}

/**
 * Every accepted order's view (GET /api/orders/:id, with its token) shows the end the store recorded, within
 * `withinMs`. On failure the message adds `progress()` (where the view runners stand against the store), which tells
 * a runner that lags from one that stopped.
 */
export async function assertOrderViews(
  clients: readonly ApiClient[],
  accepted: readonly Accepted[],
  ledger: Ledger,
  withinMs: number,
  progress: () => Promise<string>,
): Promise<void> {
  const expected = (id: string) => (ledger.orders.get(id)?.confirmed === 1 ? 'confirmed' : 'expired');
  let differing = [...accepted];
  const deadline = performance.now() + withinMs;
  const shown = new Map<string, string>();
  const check = async () => {
    let next = 0;
    const reader = async (client: ApiClient) => {
      while (next < differing.length) {
        const { order } = differing[next++] as (typeof differing)[number];
        const answer = await client.send('GET', `/api/orders/${order.id}`, {
          token: order.token,
          timeoutMs: 5_000,
        });
        shown.set(
          order.id,
          `HTTP ${answer.status} ${(answer.body as { status?: string } | undefined)?.status}`,
        );
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => reader(clients[i % clients.length] as ApiClient)));
    differing = differing.filter((r) => shown.get(r.order.id) !== `HTTP 200 ${expected(r.order.id)}`);
    return differing.length === 0;
  };
  await pollUntil(check, deadline, 250);
  const where = differing.length === 0 ? '' : `; ${await progress()}`;
  assert.deepEqual(
    differing
      .slice(0, 10)
      .map((r) => `${r.order.id}: store ${expected(r.order.id)}, view ${shown.get(r.order.id)}`),
    [],
    `every order's view shows its end (${differing.length} do not${where})`,
  );
}

/**
 * The figures of a run, for the issue's note: the orders by fate (rejected: expired with no seat reserved; lost:
 * accepted but not in the store; doubled: placed, confirmed or expired more than once, or both; unacknowledged: in
 * the store without a 202), the longest time from acceptance to the end by fate, per fault when it was done, when
 * the part was back and when orders confirmed again (the first confirmation seen of an order accepted after the
 * fault), the rates, and the failures by kind.
 */
export function figuresOf(
  records: readonly RegistrationRecord[],
  ledger: Ledger,
  faults: readonly Fault[],
  start: number,
  offeredPerSec: number,
) {
  const accepted = records.filter((r): r is Accepted => r.order !== undefined);
  const acceptedIds = new Set(accepted.map((r) => r.order.id));
  const refused = records.filter((r) => r.order === undefined);
  const refusedKinds: Record<string, number> = {};
  for (const r of refused) refusedKinds[r.failure ?? r.step] = (refusedKinds[r.failure ?? r.step] ?? 0) + 1;
  const gaveUp: Record<string, number> = {};
  for (const r of accepted) if (r.failure !== undefined) gaveUp[r.failure] = (gaveUp[r.failure] ?? 0) + 1;
  /** Rejected: no seat could be reserved (sold out); it expires like the others, which held seats or never heard. */
  const rejected = (fate: OrderFate) => fate.reserved !== undefined && fate.reserved.length === 0;
  const fates = accepted.flatMap((record) => {
    const fate = ledger.orders.get(record.order.id);
    return fate === undefined ? [] : [{ record, fate }];
  });
  const ended = (kind: 'confirmed' | 'rejected' | 'expired') =>
    fates.filter(({ fate }) =>
      kind === 'confirmed'
        ? fate.confirmed === 1
        : fate.expired === 1 && (kind === 'rejected') === rejected(fate),
    );
  const maxToEnd = (kind: 'confirmed' | 'rejected' | 'expired') =>
    Math.round(
      Math.max(
        0,
        ...ended(kind).map(({ record, fate }) => (fate.settledAt ?? 0) - toEpoch(record.order.acceptedAt)),
      ),
    );
  const doubled = [...ledger.orders.values()].filter(
    (o) => o.placed > 1 || o.confirmed > 1 || o.expired > 1 || o.confirmed + o.expired > 1,
  ).length;
  const serverErrors: Record<string, number> = {};
  for (const r of records) {
    const status = r.failedAnswer?.status ?? 0;
    if (status < 500) continue;
    // The latest fault made before it, while that part was still down or just back.
    const during = faults.findLast(
      (f) =>
        (r.failedAt ?? 0) >= f.at &&
        (r.failedAt ?? 0) <= (f.backAt ?? Number.POSITIVE_INFINITY) + OUTAGE_TAIL_MS,
    );
    const key = `${status} at ${r.step} ${during === undefined ? 'outside the faults' : `during "${during.name}"`}`;
    serverErrors[key] = (serverErrors[key] ?? 0) + 1;
  }
  const acceptedTimes = accepted.map((r) => r.order.acceptedAt);
  return {
    orders: {
      offered: records.length,
      accepted: accepted.length,
      refused: refused.length,
      confirmed: ended('confirmed').length,
      rejected: ended('rejected').length,
      expired: ended('expired').length,
      lost: accepted.filter((r) => ledger.orders.get(r.order.id)?.placed !== 1).length,
      doubled,
      unacknowledged: [...ledger.orders.keys()].filter((id) => !acceptedIds.has(id)).length,
      leftUnpaid: records.filter((r) => r.step === LEFT_UNPAID).length,
      expiredNeverReserved: ended('expired').filter(({ fate }) => fate.reserved === undefined).length,
    },
    maxAcceptedToEndMs: {
      confirmed: maxToEnd('confirmed'),
      rejected: maxToEnd('rejected'),
      expired: maxToEnd('expired'),
    },
    faults: faults.map((fault) => {
      const confirmedAfter = records
        .filter((r) => r.order !== undefined && r.order.acceptedAt >= fault.at && r.confirmedAt !== undefined)
        .map((r) => (r.confirmedAt as number) - fault.at);
      return {
        fault: fault.name,
        atS: seconds(fault.at - start),
        backAfterMs: fault.backAt === undefined ? null : Math.round(fault.backAt - fault.at),
        confirmingAgainAfterMs: confirmedAfter.length === 0 ? null : Math.round(Math.min(...confirmedAfter)),
      };
    }),
    rates: {
      offeredPerSec: Number(offeredPerSec.toFixed(1)),
      acceptedPerSec: Number(
        (
          (accepted.length * 1000) /
          Math.max(1, Math.max(...acceptedTimes) - Math.min(...acceptedTimes))
        ).toFixed(1),
      ),
    },
    refusedKinds,
    registrantsGaveUp: gaveUp,
    serverErrors,
  };
}
