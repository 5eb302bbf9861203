/**
 * The registrant's operations up to payment: see a published conference, order seats (the reservation stays
 * asynchronous: 202 + Location, then GET with `?wait=`), change them, name the registrant, find or read the order.
 * Placing or finding an order answers its token, which every operation on the order requires (api.ts).
 */
import { uuidv7 } from '@stratus/core';
import type { ConferenceSystem } from '../../app/system.js';
import { MAX_SEATS_PER_TYPE, type PersonalInfo } from '../../domain/contracts.js';
import { NotFoundError, ValidationError } from '../../domain/errors.js';
import { fromCents } from '../../domain/pricing.js';
import type { ConferenceView } from '../../read-models/conference-view.js';
import { ORDER, type OrderView } from '../../read-models/order-view.js';
import type { AbuseLimits } from '../limits/abuse-limits.js';
import { orderToken } from '../order-token.js';
import { isSlugParam } from '../schemas/text.js';
import {
  assertOpen,
  assignRegistrant,
  existingOrder,
  type Handlers,
  param,
  seatTypeNames,
  settle,
  uuidParam,
} from './support.js';

interface SeatSelectionBody {
  readonly seats: readonly { readonly seatTypeId: string; readonly quantity: number }[];
}

type RegistrationHandlers = Pick<
  Handlers,
  'publicConference' | 'placeOrder' | 'findOrder' | 'getOrder' | 'changeSeats' | 'assignRegistrant'
>;

export function registrationHandlers(
  system: ConferenceSystem,
  limits: AbuseLimits,
  secret: Buffer,
): RegistrationHandlers {
  const { queries, commands, clock } = system;
  const access = (orderId: string) => ({ orderId, orderToken: orderToken(orderId, secret) });

  async function publishedConference(slug: string): Promise<ConferenceView> {
    const view = isSlugParam(slug) ? await queries.conferenceBySlug(slug) : undefined;
    if (view === undefined || !view.isPublished) throw new NotFoundError('Conference', slug);
    return view;
  }

  async function orderBody(order: OrderView) {
    const names = seatTypeNames(await queries.conference(order.conferenceId));
    return {
      orderId: order.orderId,
      conferenceId: order.conferenceId,
      status: order.status,
      lines: order.lines.map((line) => ({
        seatTypeId: line.seatTypeId,
        name: names.get(line.seatTypeId) ?? '',
        requested: line.requested,
        reserved: line.reserved,
        unitPrice: fromCents(line.unitPriceCents),
        lineTotal: fromCents(line.lineTotalCents),
      })),
      total: fromCents(order.totalCents),
      isFreeOfCharge: order.isFreeOfCharge,
      reservationExpiresAt:
        order.reservationExpiresAt === null ? null : new Date(order.reservationExpiresAt).toISOString(),
      accessCode: order.accessCode,
      registrant: order.registrant,
    };
  }

  const orderVersion = async (orderId: string) => (await queries.order(orderId))?.version ?? -1;

  return {
    async publicConference(request) {
      const view = await publishedConference(param(request, 'slug'));
      return {
        id: view.id,
        slug: view.slug,
        name: view.name,
        tagline: view.tagline,
        description: view.description,
        location: view.location,
        startDate: view.startDate,
        endDate: view.endDate,
        seatTypes: view.seatTypes.map((seat) => ({
          id: seat.id,
          name: seat.name,
          description: seat.description,
          price: fromCents(seat.priceCents),
          available: seat.available,
        })),
      };
    },

    async placeOrder(request, reply) {
      const conference = await publishedConference(param(request, 'slug'));
      const seats = selection(request.body as SeatSelectionBody, conference);
      await limits.hold(conference.id, request.ip, 1, seatCount(seats));
      const orderId = uuidv7(clock.now());
      system.absent(ORDER, orderId);
      await commands.send('RegisterToConference', { orderId, conferenceId: conference.id, seats });
      await settle(system, async () => (await queries.order(orderId)) !== undefined);
      return reply.code(202).header('location', `/api/orders/${orderId}`).send(access(orderId));
    },

    async findOrder(request) {
      const { email, accessCode } = request.query as { email: string; accessCode: string };
      const order = await limits.checkCode(`order ${email.trim()}`, request.ip, () =>
        queries.findOrder(email, accessCode),
      );
      if (order === undefined) throw new NotFoundError('Order', 'with this e-mail and access code');
      return access(order.orderId);
    },

    async getOrder(request) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const query = request.query as { wait?: number; until?: string };
      const waitMs = Math.round((query.wait ?? 0) * 1000);
      // `until` names the statuses to wait for (comma-separated); by default any but pending.
      const wanted = query.until?.split(',');
      const arrived = (order: OrderView | undefined) =>
        order !== undefined &&
        (wanted === undefined ? order.status !== 'pending' : wanted.includes(order.status));
      let order = await queries.order(orderId);
      // Right after placing, the order may not be in the view yet: the wait covers that too.
      if (waitMs > 0 && !arrived(order)) {
        order =
          (await system.waitFor(async () => {
            const current = await queries.order(orderId);
            return arrived(current) ? current : undefined;
          }, waitMs)) ?? (await queries.order(orderId));
      }
      if (order === undefined) throw new NotFoundError('Order', orderId);
      return orderBody(order);
    },

    async changeSeats(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const order = await existingOrder(system, orderId);
      assertOpen(order, clock.now());
      const conference = await queries.conference(order.conferenceId);
      if (conference === undefined) throw new NotFoundError('Conference', order.conferenceId);
      const seats = selection(request.body as SeatSelectionBody, conference);
      const requested = order.lines.reduce((sum, line) => sum + line.requested, 0);
      await limits.hold(order.conferenceId, request.ip, 0, seatCount(seats) - requested);
      await commands.send('RegisterToConference', { orderId, conferenceId: order.conferenceId, seats });
      await settle(system, async () => (await orderVersion(orderId)) > order.version);
      return reply.code(202).header('location', `/api/orders/${orderId}`).send({ orderId });
    },

    async assignRegistrant(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      await assignRegistrant(system, orderId, request.body as PersonalInfo, false);
      return reply.code(204).send();
    },
  };
}

function seatCount(seats: readonly { readonly quantity: number }[]): number {
  return seats.reduce((sum, seat) => sum + seat.quantity, 0);
}

/** The seats asked for, checked against the conference's seat types and the per-order limits. */
function selection(body: SeatSelectionBody, conference: ConferenceView) {
  const invalid = (message: string) => new ValidationError({ seats: message }, message);
  const known = new Set(conference.seatTypes.map((seat) => seat.id));
  const seen = new Set<string>();
  for (const { seatTypeId, quantity } of body.seats) {
    if (!known.has(seatTypeId))
      throw invalid(`Invalid seat type ID '${seatTypeId}' for conference with ID '${conference.id}'`);
    if (seen.has(seatTypeId)) throw invalid('A seat type can appear only once.');
    seen.add(seatTypeId);
    if (quantity > MAX_SEATS_PER_TYPE)
      throw invalid(`At most ${MAX_SEATS_PER_TYPE} seats of one type can be ordered.`);
  }
  if (!body.seats.some((seat) => seat.quantity > 0)) throw invalid('One or more items are required.');
  return body.seats.map(({ seatTypeId, quantity }) => ({ seatTypeId, quantity }));
}
