/**
 * The JSON API (a Fastify plugin): the owner's side (conferences, seat types, publishing, orders) behind a bearer
 * token, and the registrant's side mirroring the public web flow (order seats, wait for the reservation, name the
 * registrant, pay or confirm a free order, find the order, assign seats). Routes, schemas and the OpenAPI document
 * come from one table (openapi.ts).
 *
 * Writes answer once the read models show them (bounded by SETTLE_MS), so a caller's next read sees its own write;
 * the seat reservation itself stays asynchronous (202 + Location, then GET with `?wait=`).
 */
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { settledAssignments } from '../app/queries.js';
import type { ConferenceSystem } from '../app/system.js';
import type { Conference } from '../domain/conference.js';
import { type ConferenceDetails, MAX_SEATS_PER_TYPE, type PersonalInfo } from '../domain/contracts.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../domain/errors.js';
import { assertValidPersonalInfo } from '../domain/personal-info.js';
import { fromCents, toCents } from '../domain/pricing.js';
import type { ConferenceView } from '../read-models/conference-view.js';
import { type AssignmentsView, ORDER, type OrderView } from '../read-models/order-view.js';
import { apiSchemaCompiler } from './api/schema-compiler.js';
import {
  type ApiOperation,
  type JsonSchema,
  type OperationId,
  openApiDocument,
  operations,
  schemas,
} from './openapi.js';
import { OWNER_TOKEN_TTL_MS, ownerTokenSecret, signOwnerToken, verifyOwnerToken } from './owner-token.js';

export interface ApiOptions {
  readonly system: ConferenceSystem;
  /** The HMAC key of owner tokens; default OWNER_TOKEN_SECRET, else a random key for this process. */
  readonly ownerTokenSecret?: string;
  /** How long an owner token is valid; default 12 hours. */
  readonly ownerTokenTtlMs?: number;
}

/** How long a write waits for the read models to show it before answering anyway. */
const SETTLE_MS = 5000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SLUG = /^\w{1,100}$/;
const POSITION = /^\d{1,6}$/;

/** An answer other than the domain's errors (401, 403); `challenge` asks for a bearer token. */
class HttpError extends Error {
  readonly statusCode: number;
  readonly challenge: boolean;
  constructor(statusCode: number, message: string, challenge = false) {
    super(message);
    this.statusCode = statusCode;
    this.challenge = challenge;
  }
}

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

interface SeatTypeBody {
  readonly name?: string;
  readonly description?: string;
  readonly quantity?: number;
  readonly price?: number;
}

interface SeatSelectionBody {
  readonly seats: readonly { readonly seatTypeId: string; readonly quantity: number }[];
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export async function apiRoutes(app: FastifyInstance, options: ApiOptions): Promise<void> {
  const { system } = options;
  const { queries, management, commands, clock } = system;
  const secret =
    options.ownerTokenSecret === undefined ? ownerTokenSecret() : Buffer.from(options.ownerTokenSecret);
  const tokenTtlMs = options.ownerTokenTtlMs ?? OWNER_TOKEN_TTL_MS;
  const document = openApiDocument();

  app.setValidatorCompiler(apiSchemaCompiler());
  app.setErrorHandler((error: unknown, request, reply) => {
    const { status, body } = errorResponse(error);
    if (status >= 500) request.log.error({ err: error }, 'API request failed');
    if (error instanceof HttpError && error.challenge) void reply.header('www-authenticate', 'Bearer');
    return reply.code(status).send(body);
  });

  /** Waits (bounded) until the read models show a write. */
  const settle = (check: () => Promise<boolean>) =>
    system.waitFor(async () => ((await check()) ? true : undefined), SETTLE_MS);

  async function ownerOnly(request: FastifyRequest): Promise<void> {
    const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
    if (match === null)
      throw new HttpError(401, 'An owner token is required (Authorization: Bearer <token>).', true);
    const claims = verifyOwnerToken(match[1] as string, secret, clock.now());
    if (claims === undefined) throw new HttpError(401, 'The owner token is invalid or has expired.', true);
    if (claims.conferenceId !== param(request, 'id').toLowerCase())
      throw new HttpError(403, 'The owner token is for another conference.');
  }

  async function publishedConference(slug: string): Promise<ConferenceView> {
    const view = SLUG.test(slug) ? await queries.conferenceBySlug(slug) : undefined;
    if (view === undefined || !view.isPublished) throw new NotFoundError('Conference', slug);
    return view;
  }

  async function existingOrder(orderId: string): Promise<OrderView> {
    const order = await queries.order(orderId);
    if (order === undefined) throw new NotFoundError('Order', orderId);
    return order;
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

  /** The order, unless it can no longer change. */
  function assertOpen(order: OrderView): void {
    if (order.status === 'confirmed') throw new InvalidOperationError('The order is already confirmed.');
    if (order.status === 'expired') throw new InvalidOperationError('The order has expired.');
    if (order.reservationExpiresAt !== null && order.reservationExpiresAt <= clock.now())
      throw new InvalidOperationError('The reservation of this order has expired.');
  }

  const orderVersion = async (orderId: string) => (await queries.order(orderId))?.version ?? -1;

  const handlers: { readonly [Id in OperationId]: Handler } = {
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
      await settle(async () => (await queries.ownerLogin(body.ownerEmail, accessCode)) === conferenceId);
      return reply
        .code(201)
        .header('location', `/api/conferences/${conferenceId}`)
        .send({ id: conferenceId, slug, accessCode });
    },

    async ownerLogin(request) {
      const { email, accessCode } = request.body as { email: string; accessCode: string };
      const conferenceId = await queries.ownerLogin(email, accessCode);
      if (conferenceId === undefined)
        throw new HttpError(401, 'Could not locate a conference with the provided email and access code.');
      return { token: signOwnerToken({ conferenceId, exp: clock.now() + tokenTtlMs }, secret), conferenceId };
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
      await settle(async () => {
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
      await settle(async () => (await queries.conference(conferenceId))?.isPublished === true);
      return reply.code(204).send();
    },

    async unpublishConference(request, reply) {
      const conferenceId = uuidParam(request, 'id', 'Conference');
      await management.unpublish(conferenceId);
      await settle(async () => (await queries.conference(conferenceId))?.isPublished === false);
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
      await settle(async () =>
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
      await settle(async () => {
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
      const orderId = uuidv7(clock.now());
      system.absent(ORDER, orderId);
      await commands.send('RegisterToConference', { orderId, conferenceId: conference.id, seats });
      await settle(async () => (await queries.order(orderId)) !== undefined);
      return reply.code(202).header('location', `/api/orders/${orderId}`).send({ orderId });
    },

    async findOrder(request) {
      const { email, accessCode } = request.query as { email: string; accessCode: string };
      const order = await queries.findOrder(email, accessCode);
      if (order === undefined) throw new NotFoundError('Order', `${email} ${accessCode}`);
      return orderBody(order);
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
      const order = await existingOrder(orderId);
      assertOpen(order);
      const conference = await queries.conference(order.conferenceId);
      if (conference === undefined) throw new NotFoundError('Conference', order.conferenceId);
      const seats = selection(request.body as SeatSelectionBody, conference);
      await commands.send('RegisterToConference', { orderId, conferenceId: order.conferenceId, seats });
      await settle(async () => (await orderVersion(orderId)) > order.version);
      return reply.code(202).header('location', `/api/orders/${orderId}`).send({ orderId });
    },

    async assignRegistrant(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const { firstName, lastName, email } = request.body as PersonalInfo;
      const before = await orderVersion(orderId);
      await commands.send('AssignRegistrantDetails', { orderId, firstName, lastName, email });
      await settle(async () => (await orderVersion(orderId)) > before);
      return reply.code(204).send();
    },

    async startPayment(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const order = await existingOrder(orderId);
      assertOpen(order);
      if (order.status !== 'reserved') throw new InvalidOperationError(notPayable(order.status));
      if (order.isFreeOfCharge || order.totalCents === 0) {
        await commands.send('ConfirmOrder', { orderId });
        await settle(async () => (await queries.order(orderId))?.status === 'confirmed');
        return reply.code(200).send({ status: 'confirmed' });
      }
      const conference = await queries.conference(order.conferenceId);
      const paymentId = uuidv7(clock.now());
      await commands.send('InitiateThirdPartyProcessorPayment', {
        paymentId,
        paymentSourceId: orderId,
        conferenceId: order.conferenceId,
        description: `Registration for ${conference?.name ?? order.conferenceId}`,
        totalCents: order.totalCents,
      });
      return reply.code(201).send({ paymentId });
    },

    async acceptPayment(request, reply) {
      const paymentId = uuidParam(request, 'paymentId', 'Payment');
      await commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
      return reply.code(204).send();
    },

    async rejectPayment(request, reply) {
      const paymentId = uuidParam(request, 'paymentId', 'Payment');
      await commands.send('CancelThirdPartyProcessorPayment', { paymentId });
      return reply.code(204).send();
    },

    async getAssignments(request) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const order = await queries.order(orderId);
      const assignments = order && (await settledAssignments(system, order, ['confirmed'], SETTLE_MS));
      if (order === undefined || assignments === undefined)
        throw new NotFoundError('SeatAssignments', orderId);
      const names = seatTypeNames(await queries.conference(order.conferenceId));
      return { seats: assignedSeats(assignments, names) };
    },

    async assignSeat(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const position = await existingPosition(request, orderId);
      const { firstName, lastName, email } = request.body as PersonalInfo;
      const attendee = { firstName, lastName, email };
      assertValidPersonalInfo(attendee);
      await commands.send('AssignSeat', { assignmentsId: orderId, position, attendee });
      await settle(async () => {
        const seat = (await queries.assignments(orderId))?.seats.find((s) => s.position === position);
        return seat?.attendee != null && sameAttendee(seat.attendee, attendee);
      });
      return reply.code(204).send();
    },

    async unassignSeat(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const position = await existingPosition(request, orderId);
      await commands.send('UnassignSeat', { assignmentsId: orderId, position });
      await settle(
        async () =>
          (await queries.assignments(orderId))?.seats.find((s) => s.position === position)?.attendee === null,
      );
      return reply.code(204).send();
    },

    async openApi() {
      return document;
    },
  };

  /** The position in the path, of a seat the order's assignments have. */
  async function existingPosition(request: FastifyRequest, orderId: string): Promise<number> {
    const raw = param(request, 'position');
    if (!POSITION.test(raw)) throw new NotFoundError('Seat', raw);
    const position = Number(raw);
    const order = await queries.order(orderId);
    const assignments = order && (await settledAssignments(system, order, ['confirmed'], SETTLE_MS));
    if (assignments === undefined) throw new NotFoundError('SeatAssignments', orderId);
    if (!assignments.seats.some((seat) => seat.position === position)) throw new NotFoundError('Seat', raw);
    return position;
  }

  for (const id of Object.keys(operations) as OperationId[]) {
    const operation: ApiOperation = operations[id];
    const body: JsonSchema | undefined = operation.body === undefined ? undefined : schemas[operation.body];
    app.route({
      method: operation.method,
      url: operation.path.replace(/\{(\w+)\}/g, ':$1'),
      schema: {
        ...(body === undefined ? {} : { body }),
        ...(operation.query === undefined ? {} : { querystring: schemas[operation.query] }),
      },
      ...(operation.owner === true ? { onRequest: ownerOnly } : {}),
      handler: handlers[id],
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Requests and answers

function param(request: FastifyRequest, name: string): string {
  return (request.params as Record<string, string | undefined>)[name] ?? '';
}

/** An id from the path; one that cannot exist (not a UUID) is simply not found. */
function uuidParam(request: FastifyRequest, name: string, entity: string): string {
  const value = param(request, name);
  if (!UUID.test(value)) throw new NotFoundError(entity, value);
  return value.toLowerCase();
}

function seatTypeNames(conference: ConferenceView | undefined): Map<string, string> {
  return new Map((conference?.seatTypes ?? []).map((seat) => [seat.id, seat.name]));
}

function assignedSeats(assignments: AssignmentsView | undefined, names: ReadonlyMap<string, string>) {
  return (assignments?.seats ?? []).map((seat) => ({
    position: seat.position,
    seatTypeId: seat.seatTypeId,
    seatTypeName: names.get(seat.seatTypeId) ?? '',
    attendee: seat.attendee,
  }));
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

function notPayable(status: OrderView['status']): string {
  switch (status) {
    case 'pending':
      return 'The seats of this order are not reserved yet.';
    case 'partiallyReserved':
      return 'Only some of the requested seats could be reserved: change the seats of the order first.';
    case 'rejected':
      return 'No seats could be reserved for this order.';
    default:
      return `The order cannot be paid (${status}).`;
  }
}

function sameAttendee(a: PersonalInfo, b: PersonalInfo): boolean {
  const same = (x: string, y: string) => x.toLowerCase() === y.toLowerCase();
  return same(a.email, b.email) && same(a.firstName, b.firstName) && same(a.lastName, b.lastName);
}

// ---------------------------------------------------------------------------------------------------------------
// Validation and errors

type Path = readonly (string | number)[];
type Fields = Record<string, string>;

function label(path: Path): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

/** A problem at `path`, kept under its top-level field (the first problem of a field wins). */
function report(fields: Fields, path: Path, message: string): void {
  const field = typeof path[0] === 'string' ? path[0] : 'body';
  fields[field] ??= `${path.length === 0 ? 'The body' : label(path)} ${message}.`;
}

function schemaMessage(error: FastifySchemaValidationError): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${/^[aeiou]/.test(String(params.type)) ? 'an' : 'a'} ${String(params.type)}`;
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minLength':
      return `must be at least ${String(params.limit)} characters long`;
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`;
    case 'maxItems':
      return `must have at most ${String(params.limit)} items`;
    case 'format':
      return params.format === 'date'
        ? 'must be a date written yyyy-mm-dd'
        : `must be a valid ${params.format}`;
    case 'additionalProperties':
      return 'is not allowed';
    default:
      return error.message ?? 'is not valid';
  }
}

/** Ajv's errors by field (the property of the body or the query parameter). */
function schemaFields(errors: readonly FastifySchemaValidationError[]): Fields {
  const fields: Fields = {};
  for (const error of errors) {
    const path: (string | number)[] = error.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'required' && typeof params.missingProperty === 'string')
      path.push(params.missingProperty);
    if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
      path.push(params.additionalProperty);
    report(fields, path, schemaMessage(error));
  }
  return fields;
}

function errorResponse(error: unknown): { status: number; body: object } {
  if (error instanceof ValidationError)
    return { status: 400, body: { error: error.message, fields: { ...error.fields } } };
  if (error instanceof NotFoundError) return { status: 404, body: { error: error.message } };
  if (error instanceof ConflictError || error instanceof InvalidOperationError)
    return { status: 409, body: { error: error.message } };
  if (error instanceof HttpError) return { status: error.statusCode, body: { error: error.message } };
  if (typeof error === 'object' && error !== null) {
    const { validation, statusCode, message } = error as {
      validation?: FastifySchemaValidationError[];
      statusCode?: number;
      message?: string;
    };
    if (Array.isArray(validation))
      return { status: 400, body: { error: 'Validation failed.', fields: schemaFields(validation) } };
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
      if (statusCode !== 400) return { status: statusCode, body: { error: message ?? 'Bad request.' } };
      const json =
        error instanceof SyntaxError || (error as { code?: string }).code === 'FST_ERR_CTP_INVALID_JSON_BODY';
      return {
        status: 400,
        body: { error: json ? 'The body is not valid JSON.' : (message ?? 'Bad request.'), fields: {} },
      };
    }
  }
  return { status: 500, body: { error: 'Internal server error.' } };
}
