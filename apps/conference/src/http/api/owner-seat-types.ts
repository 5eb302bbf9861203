/** The owner's operations on seat types: add one with its quota and price, change one. */
import type { ConferenceSystem } from '../../app/system.js';
import { toCents } from '../../domain/pricing.js';
import { type Handlers, settle, uuidParam } from './support.js';

interface SeatTypeBody {
  readonly name?: string;
  readonly description?: string;
  readonly quantity?: number;
  readonly price?: number;
}

export function ownerSeatTypeHandlers(
  system: ConferenceSystem,
): Pick<Handlers, 'createSeatType' | 'updateSeatType'> {
  const { queries, management } = system;
  return {
    async createSeatType(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const body = request.body as Required<SeatTypeBody>;
      const seatTypeId = await management.createSeat(conferenceId, {
        name: body.name,
        description: body.description,
        quantity: body.quantity,
        priceCents: toCents(body.price),
      });
      // Orders are priced and checked against the read model: it must know the seat type.
      await settle(system, async () =>
        Boolean((await queries.conference(conferenceId))?.seatTypes.some((seat) => seat.id === seatTypeId)),
      );
      return reply.code(201).send({ id: seatTypeId });
    },

    async updateSeatType(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      const seatTypeId = uuidParam(request, 'seatTypeId', 'SeatType');
      const { name, description, quantity, price } = request.body as SeatTypeBody;
      await management.updateSeat(conferenceId, seatTypeId, {
        ...(name === undefined ? {} : { name }),
        ...(description === undefined ? {} : { description }),
        ...(quantity === undefined ? {} : { quantity }),
        ...(price === undefined ? {} : { priceCents: toCents(price) }),
      });
      const wanted = (await management.get(conferenceId)).seatTypes.find(
        (seat) => seat.seatTypeId === seatTypeId,
      );
      await settle(system, async () => {
        const seat = (await queries.conference(conferenceId))?.seatTypes.find((s) => s.id === seatTypeId);
        return (
          wanted === undefined ||
          (seat !== undefined &&
            seat.name === wanted.name &&
            seat.description === wanted.description &&
            seat.quantity === wanted.quantity &&
            seat.priceCents === wanted.priceCents)
        );
      });
      return reply.code(204).send();
    },
  };
}
