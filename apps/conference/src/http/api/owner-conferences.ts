/**
 * The owner's operations on a conference: create it, show and change its details, publish it, rotate its access
 * code, list its orders and change an order's registrant.
 */
import type { ConferenceSystem } from '../../app/system.js';
import type { Conference } from '../../domain/conference.js';
import type { ConferenceDetails, PersonalInfo } from '../../domain/contracts.js';
import { NotFoundError } from '../../domain/errors.js';
import { fromCents } from '../../domain/pricing.js';
import type { ConferenceView } from '../../read-models/conference-view.js';
import {
  assignedSeats,
  assignRegistrant,
  type Handlers,
  seatTypeNames,
  settle,
  uuidParam,
} from './support.js';

interface NewConferenceBody {
  readonly name: string;
  readonly slug: string;
  readonly description: string;
  readonly location: string;
  readonly tagline?: string;
  readonly twitterSearch?: string;
  readonly startDate: string;
  readonly endDate: string;
  readonly ownerName: string;
  readonly ownerEmail: string;
}

type ConferenceHandlers = Pick<
  Handlers,
  | 'createConference'
  | 'getConference'
  | 'updateConference'
  | 'publishConference'
  | 'unpublishConference'
  | 'rotateAccessCode'
  | 'conferenceOrders'
  | 'ownerAssignRegistrant'
>;

export function ownerConferenceHandlers(
  system: ConferenceSystem,
  /** A new owner token for the conference and its current access code. */
  ownerToken: (conferenceId: string, accessCode: string) => string,
): ConferenceHandlers {
  const { queries, management } = system;
  return {
    async createConference(request, reply) {
      const body = request.body as NewConferenceBody;
      const created = await management.create({
        slug: body.slug,
        owner: { name: body.ownerName, email: body.ownerEmail },
        details: {
          name: body.name,
          description: body.description,
          location: body.location,
          tagline: body.tagline ?? '',
          twitterSearch: body.twitterSearch ?? '',
          startDate: body.startDate,
          endDate: body.endDate,
        },
      });
      const { conferenceId, slug, accessCode } = created;
      // The owner can log in as soon as this answers.
      await settle(
        system,
        async () => (await queries.ownerLogin(body.ownerEmail, accessCode)) === conferenceId,
      );
      return reply
        .code(201)
        .header('location', `/api/conferences/${conferenceId}`)
        .send({ id: conferenceId, slug, accessCode });
    },

    async getConference(request) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      // The aggregate is the truth; only availability comes from the read model.
      const conference = await management.get(conferenceId);
      return ownerConferenceBody(conference, await queries.conference(conferenceId));
    },

    async updateConference(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const current = await management.get(conferenceId);
      const details: ConferenceDetails = {
        ...current.details,
        ...(request.body as Partial<ConferenceDetails>),
      };
      await management.update(conferenceId, details);
      await settle(system, async () => {
        const view = await queries.conference(conferenceId);
        return (
          view !== undefined &&
          (Object.keys(details) as (keyof ConferenceDetails)[]).every((key) => view[key] === details[key])
        );
      });
      return reply.code(204).send();
    },

    async publishConference(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      await management.publish(conferenceId);
      await settle(system, async () => (await queries.conference(conferenceId))?.isPublished === true);
      return reply.code(204).send();
    },

    async unpublishConference(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      await management.unpublish(conferenceId);
      await settle(system, async () => (await queries.conference(conferenceId))?.isPublished === false);
      return reply.code(204).send();
    },

    async rotateAccessCode(request) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const accessCode = await management.rotateAccessCode(conferenceId);
      // The new token is checked against the read model's code: answer once it has the new one.
      await settle(system, async () => (await queries.conference(conferenceId))?.accessCode === accessCode);
      return { accessCode, token: ownerToken(conferenceId, accessCode) };
    },

    async ownerAssignRegistrant(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const orderId = uuidParam(request, 'orderId', 'Order');
      if ((await queries.order(orderId))?.conferenceId !== conferenceId)
        throw new NotFoundError('Order', orderId);
      await assignRegistrant(system, orderId, request.body as PersonalInfo, true);
      return reply.code(204).send();
    },

    async conferenceOrders(request) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const names = seatTypeNames(await queries.conference(conferenceId));
      const rows = [...(await queries.ordersOfConference(conferenceId))].sort((a, b) =>
        a.orderId < b.orderId ? -1 : 1,
      );
      const orders = await Promise.all(
        rows.map(async (row) => ({
          orderId: row.orderId,
          accessCode: row.accessCode,
          status: row.status,
          total: fromCents(row.totalCents),
          registrant: row.registrant,
          seats: assignedSeats(await queries.assignments(row.orderId), names),
        })),
      );
      return { orders };
    },
  };
}

function ownerConferenceBody(conference: Conference, view: ConferenceView | undefined) {
  const available = new Map((view?.seatTypes ?? []).map((seat) => [seat.id, seat.available]));
  return {
    id: conference.conferenceId,
    slug: conference.slug,
    accessCode: conference.accessCode,
    ownerName: conference.owner.name,
    ownerEmail: conference.owner.email,
    ...conference.details,
    isPublished: conference.isPublished,
    wasEverPublished: conference.wasEverPublished,
    seatTypes: conference.seatTypes.map((seat) => ({
      id: seat.seatTypeId,
      name: seat.name,
      description: seat.description,
      quantity: seat.quantity,
      price: fromCents(seat.priceCents),
      available: available.get(seat.seatTypeId) ?? null,
    })),
  };
}
