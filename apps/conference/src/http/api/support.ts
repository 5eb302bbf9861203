/**
 * What the API's handlers share: the handler type, reading path parameters and bearer tokens, settling writes,
 * finding an order that can still change, naming its registrant, and seat names.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import type { PersonalInfo } from '../../domain/contracts.js';
import { InvalidOperationError, NotFoundError } from '../../domain/errors.js';
import type { ConferenceView } from '../../read-models/conference-view.js';
import type { AssignmentsView, OrderView } from '../../read-models/order-view.js';
import type { OperationId, operations } from '../api-operations.js';

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The operations of the table (api-operations.ts) routed from it: all but those with a raw body. */
export type RoutedOperationId = {
  [Id in OperationId]: (typeof operations)[Id] extends { readonly raw: true } ? never : Id;
}[OperationId];

/** The handler of every operation routed from the table. */
export type Handlers = { readonly [Id in RoutedOperationId]: Handler };

/** How long a write waits for the read models to show it before answering anyway. */
export const SETTLE_MS = 5000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Waits (bounded) until the read models show a write. */
export function settle(system: ConferenceSystem, check: () => Promise<boolean>): Promise<unknown> {
  return system.waitFor(async () => ((await check()) ? true : undefined), SETTLE_MS);
}

/** The bearer token of the Authorization header, if any. */
export function bearerToken(request: FastifyRequest): string | undefined {
  return /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
}

export function param(request: FastifyRequest, name: string): string {
  return (request.params as Record<string, string | undefined>)[name] ?? '';
}

/** An id from the path; one that cannot exist (not a UUID) is simply not found. */
export function uuidParam(request: FastifyRequest, name: string, entity: string): string {
  const value = param(request, name);
  if (!UUID.test(value)) throw new NotFoundError(entity, value);
  return value.toLowerCase();
}

export function seatTypeNames(conference: ConferenceView | undefined): Map<string, string> {
  return new Map((conference?.seatTypes ?? []).map((seat) => [seat.id, seat.name]));
}

export function assignedSeats(assignments: AssignmentsView | undefined, names: ReadonlyMap<string, string>) {
  return (assignments?.seats ?? []).map((seat) => ({
    position: seat.position,
    seatTypeId: seat.seatTypeId,
    seatTypeName: names.get(seat.seatTypeId) ?? '',
    attendee: seat.attendee,
  }));
}

export async function existingOrder(system: ConferenceSystem, orderId: string): Promise<OrderView> {
  const order = await system.queries.order(orderId);
  if (order === undefined) throw new NotFoundError('Order', orderId);
  return order;
}

/** The order, unless it can no longer change. */
export function assertOpen(order: OrderView, now: number): void {
  if (order.status === 'confirmed') throw new InvalidOperationError('The order is already confirmed.');
  if (order.status === 'expired') throw new InvalidOperationError('The order has expired.');
  if (order.reservationExpiresAt !== null && order.reservationExpiresAt <= now)
    throw new InvalidOperationError('The reservation of this order has expired.');
}

/** Names the registrant of an order (`byOwner`: the owner, who may change a confirmed order's), once the view shows it. */
export async function assignRegistrant(
  system: ConferenceSystem,
  orderId: string,
  { firstName, lastName, email }: PersonalInfo,
  byOwner: boolean,
): Promise<void> {
  const version = async () => (await system.queries.order(orderId))?.version ?? -1;
  const before = await version();
  await system.commands.send('AssignRegistrantDetails', { orderId, firstName, lastName, email, byOwner });
  await settle(system, async () => (await version()) > before);
}
