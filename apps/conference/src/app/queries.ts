/**
 * The read side: what the web sites and the API ask, answered from the document views. Seat availability goes
 * through Cache-Aside with the Journey's rule for how stale it may be (it drives the public registration page, the
 * busiest read).
 */
import type { Clock } from '@stratus/core';
import { CacheAside } from '@stratus/data';
import type { DocumentReader, DocumentSlice } from '@stratus/eventsourcing';
import {
  CONFERENCE,
  CONFERENCE_SLUG,
  type ConferenceSlugView,
  type ConferenceView,
  OWNER_LOGIN,
  type OwnerLoginView,
  ownerLoginId,
  PUBLISHED_CONFERENCE,
  type PublishedConferenceView,
  type SeatTypeView,
} from '../read-models/conference-view.js';
import {
  ASSIGNMENTS,
  type AssignmentsView,
  CONFERENCE_ORDER,
  type ConferenceOrderView,
  ORDER,
  type OrderView,
  orderLookup,
  PAYMENT,
  type PaymentView,
} from '../read-models/order-view.js';
import type { ConferenceSystem } from './system.js';

/**
 * How long the seat types of a conference may be served from cache (the Journey's CachingConferenceDao): long when
 * availability is plentiful or gone, not at all when few seats remain, so registrants rarely see seats that are not
 * there. 0 means do not cache.
 */
export function seatTypesTtlMs(seatTypes: readonly Pick<SeatTypeView, 'available'>[]): number {
  if (seatTypes.every((seat) => seat.available > 200 || seat.available <= 0)) return 5 * 60_000;
  if (seatTypes.some((seat) => seat.available > 0 && seat.available < 30)) return 0;
  if (seatTypes.some((seat) => seat.available > 0 && seat.available < 100)) return 20_000;
  return 60_000;
}

/** Where a page of a list starts: after a cursor (from the first when none), or right before one. */
export type PageCursor = { readonly after?: string } | { readonly before: string };

/** A page of a list, and the cursors of the pages beside it when there are any. */
export interface Page<T> {
  readonly items: readonly T[];
  /** Pass as `after` for the next page. */
  readonly next?: string;
  /** Pass as `before` for the previous page. */
  readonly previous?: string;
}

export interface Queries {
  conference(id: string): Promise<ConferenceView | undefined>;
  conferenceBySlug(slug: string): Promise<ConferenceView | undefined>;
  /** A page of at most `size` published conferences, in the order they were created. */
  publishedConferences(cursor: PageCursor, size: number): Promise<Page<PublishedConferenceView>>;
  /** The seat types of a conference with their availability, possibly a little stale (seatTypesTtlMs). */
  seatTypes(conferenceId: string): Promise<readonly SeatTypeView[]>;
  /** The conference whose owner has this e-mail and access code. */
  ownerLogin(email: string, accessCode: string): Promise<string | undefined>;
  order(orderId: string): Promise<OrderView | undefined>;
  findOrder(email: string, accessCode: string): Promise<OrderView | undefined>;
  ordersOfConference(conferenceId: string): Promise<ConferenceOrderView[]>;
  assignments(orderId: string): Promise<AssignmentsView | undefined>;
  payment(paymentId: string): Promise<PaymentView | undefined>;
}

/**
 * An order's seat assignments. They follow the order's confirmation by a moment (a reaction creates them), so for
 * an order whose status is one of `settling` this waits for them, up to `timeoutMs`.
 */
export async function settledAssignments(
  system: { readonly queries: Queries; waitFor: ConferenceSystem['waitFor'] },
  order: OrderView,
  settling: readonly OrderView['status'][],
  timeoutMs: number,
): Promise<AssignmentsView | undefined> {
  const assignments = await system.queries.assignments(order.orderId);
  if (assignments !== undefined || !settling.includes(order.status)) return assignments;
  return system.waitFor(() => system.queries.assignments(order.orderId), timeoutMs);
}

export function documentQueries(conferences: DocumentReader, orders: DocumentReader, clock: Clock): Queries {
  const cache = new CacheAside({ name: 'seat-types', clock, ttlMs: 60_000, local: { maxEntries: 1000 } });
  const conference = (id: string) => conferences.get<ConferenceView>(CONFERENCE, id);
  return {
    conference,
    async conferenceBySlug(slug) {
      const found = await conferences.get<ConferenceSlugView>(CONFERENCE_SLUG, slug);
      return found === undefined ? undefined : conference(found.conferenceId);
    },
    async publishedConferences(cursor, size) {
      const slice = (part: DocumentSlice) =>
        conferences.find<PublishedConferenceView>(PUBLISHED_CONFERENCE, undefined, part);
      // Each page reads its own documents and one beyond, and at most one more to know of its other side.
      const beyond = async (part: { after: string } | { before: string }) =>
        (await slice({ ...part, limit: 1 })).length > 0;
      if ('before' in cursor) {
        const found = await slice({ before: cursor.before, limit: size + 1 });
        const items = found.slice(-size);
        const last = items.at(-1)?.id ?? cursor.before;
        return {
          items,
          ...(found.length > size ? { previous: items[0]?.id } : {}),
          ...((await beyond({ after: last })) ? { next: last } : {}),
        };
      }
      const found = await slice({ ...cursor, limit: size + 1 });
      const items = found.slice(0, size);
      const first = items[0]?.id ?? cursor.after;
      return {
        items,
        ...(found.length > size ? { next: items.at(-1)?.id } : {}),
        ...(first !== undefined && (await beyond({ before: first })) ? { previous: first } : {}),
      };
    },
    async seatTypes(conferenceId) {
      const key = `seatTypes:${conferenceId}`;
      const cached = await cache.get<readonly SeatTypeView[]>(key);
      if (cached !== undefined) return cached;
      const seatTypes = (await conference(conferenceId))?.seatTypes ?? [];
      const ttlMs = seatTypesTtlMs(seatTypes);
      if (ttlMs > 0) await cache.set(key, seatTypes, { ttlMs });
      return seatTypes;
    },
    async ownerLogin(email, accessCode) {
      const [found] = await conferences.find<OwnerLoginView>(OWNER_LOGIN, ownerLoginId(email, accessCode));
      return found?.conferenceId;
    },
    order: (orderId) => orders.get<OrderView>(ORDER, orderId),
    async findOrder(email, accessCode) {
      const [found] = await orders.find<OrderView>(ORDER, orderLookup(email, accessCode));
      return found;
    },
    ordersOfConference: (conferenceId) => orders.find<ConferenceOrderView>(CONFERENCE_ORDER, conferenceId),
    assignments: (orderId) => orders.get<AssignmentsView>(ASSIGNMENTS, orderId),
    payment: (paymentId) => orders.get<PaymentView>(PAYMENT, paymentId),
  };
}
