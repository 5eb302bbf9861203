/**
 * What the public site's routes share: the conference of the URL, the order's token check, waiting for an order,
 * and an order's hold.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { OrderView } from '../../../read-models/order-view.js';
import { isSlugParam } from '../../schemas/text.js';
import { fieldsOf, type Site, sendPage, VIEW_WAIT_MS } from '../support.js';
import { type Hold, messagePage } from '../views/public-page.js';
import { PUBLIC_TEXT } from '../views/public-text.js';

/** The conference of the `slug` route parameter, or a 404 page already sent (the Journey's tenant rule). */
export async function conferenceOf(
  system: ConferenceSystem,
  params: unknown,
  reply: FastifyReply,
): Promise<ConferenceView | undefined> {
  const { slug } = fieldsOf(params);
  const conference = isSlugParam(slug) ? await system.queries.conferenceBySlug(slug) : undefined;
  if (conference === undefined) {
    sendPage(reply, 404, messagePage(undefined, 'Not found', PUBLIC_TEXT.invalidConference));
    return undefined;
  }
  return conference;
}

/**
 * Whether the request carries the token of order `orderId` (its cookie); else the 404 page is sent, as for an order
 * that does not exist.
 */
export function mayOpenOrder(
  site: Site,
  request: FastifyRequest,
  reply: FastifyReply,
  conference: ConferenceView,
  orderId: string,
): boolean {
  if (site.access.hasOrder(request, orderId)) return true;
  sendPage(reply, 404, messagePage(conference, 'Registration', PUBLIC_TEXT.noSuchOrder));
  return false;
}

/** An order of this conference, waiting up to 5 s for one that satisfies `ready`. */
export function waitForOrder(
  system: ConferenceSystem,
  conference: ConferenceView,
  orderId: string,
  ready: (order: OrderView) => boolean,
): Promise<OrderView | undefined> {
  return system.waitFor(async () => {
    const order = await system.queries.order(orderId);
    return order !== undefined && order.conferenceId === conference.id && ready(order) ? order : undefined;
  }, VIEW_WAIT_MS);
}

export async function orderOf(
  system: ConferenceSystem,
  conference: ConferenceView,
  orderId: string,
): Promise<OrderView | undefined> {
  const order = await system.queries.order(orderId);
  return order?.conferenceId === conference.id ? order : undefined;
}

export function isExpired(order: OrderView, now: number): boolean {
  return (
    order.status === 'expired' || (order.reservationExpiresAt !== null && order.reservationExpiresAt < now)
  );
}

/** How long the order's seats are still held at `now`, for the countdown. */
export function holdOf(order: OrderView, now: number): Hold {
  const expiresAt = order.reservationExpiresAt;
  return { orderId: order.orderId, remainingMs: expiresAt === null ? null : Math.max(0, expiresAt - now) };
}
