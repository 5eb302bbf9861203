/** The owner's operations on a conference: create it, show and change its details, publish it, list its orders. */
import type { ConferenceSystem } from '../../app/system.js';
import type { Conference } from '../../domain/conference.js';
import type { ConferenceDetails } from '../../domain/contracts.js';
import { fromCents } from '../../domain/pricing.js';
import type { ConferenceView } from '../../read-models/conference-view.js';
import { assignedSeats, type Handlers, seatTypeNames, settle, uuidParam } from './support.js';

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
  | 'conferenceOrders'
>;

export function ownerConferenceHandlers(system: ConferenceSystem): ConferenceHandlers {
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
