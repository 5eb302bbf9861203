/**
 * The JSON API as data: the JSON schemas the routes validate with, the table of operations the plugin registers, and
 * the OpenAPI 3.1 document built from both (served at /api/openapi.json). The document cannot drift from the
 * routes: api.ts registers exactly `operations`, with these very schema objects.
 *
 * Request schemas stay within what Fastify's Ajv (draft-07) compiles; response schemas are documentation only and
 * use OpenAPI 3.1 (JSON Schema 2020-12) nullable types.
 */
import { CONCURRENT_WRITE_MESSAGE } from './concurrent-write.js';
import { apiInputs } from './schemas/inputs.js';
import { arrayOf, date, type JsonSchema, nullable, object, price, uuid } from './schemas/json-schema.js';

const { PersonalInfo: personalInfo, ConferenceChanges } = apiInputs;
const seatAssignment = object({
  position: { type: 'integer', minimum: 0 },
  seatTypeId: uuid,
  seatTypeName: { type: 'string' },
  attendee: nullable(personalInfo),
});

/** Every schema of the API by name (the document's components): the inputs (./schemas/inputs.ts) and the answers. */
export const schemas = {
  Error: object({ error: { type: 'string' } }),
  ValidationError: object({
    error: { type: 'string' },
    fields: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'A message per offending field of the body or query.',
    },
  }),
  ...apiInputs,
  ConferenceCreated: object({ id: uuid, slug: { type: 'string' }, accessCode: { type: 'string' } }),
  OwnerSession: object({
    token: { type: 'string', description: 'Send it as `Authorization: Bearer <token>`.' },
    conferenceId: uuid,
  }),
  OwnerConference: object({
    id: uuid,
    slug: { type: 'string' },
    accessCode: { type: 'string' },
    ownerName: { type: 'string' },
    ownerEmail: { type: 'string' },
    ...ConferenceChanges.properties,
    isPublished: { type: 'boolean' },
    wasEverPublished: { type: 'boolean' },
    seatTypes: arrayOf(
      object({
        id: uuid,
        name: { type: 'string' },
        description: { type: 'string' },
        quantity: { type: 'integer' },
        price,
        available: {
          type: ['integer', 'null'],
          description: 'Seats not held by a reservation, from the read model (null until it knows the type).',
        },
      }),
    ),
  }),
  Created: object({ id: uuid }),
  PublicConference: object({
    id: uuid,
    slug: { type: 'string' },
    name: { type: 'string' },
    tagline: { type: 'string' },
    description: { type: 'string' },
    location: { type: 'string' },
    startDate: date,
    endDate: date,
    seatTypes: arrayOf(
      object({
        id: uuid,
        name: { type: 'string' },
        description: { type: 'string' },
        price,
        available: { type: 'integer', minimum: 0 },
      }),
    ),
  }),
  OrderAccepted: object({ orderId: uuid }),
  Order: object({
    orderId: uuid,
    conferenceId: uuid,
    status: {
      type: 'string',
      enum: ['pending', 'reserved', 'partiallyReserved', 'confirmed', 'rejected', 'expired'],
    },
    lines: arrayOf(
      object({
        seatTypeId: uuid,
        name: { type: 'string' },
        requested: { type: 'integer' },
        reserved: { type: 'integer' },
        unitPrice: price,
        lineTotal: { type: 'number' },
      }),
    ),
    total: { type: 'number' },
    isFreeOfCharge: { type: 'boolean' },
    reservationExpiresAt: { type: ['string', 'null'], format: 'date-time' },
    accessCode: { type: 'string' },
    registrant: nullable(personalInfo),
  }),
  PaymentInitiated: object({ paymentId: uuid }),
  OrderConfirmed: object({ status: { type: 'string', const: 'confirmed' } }),
  SeatAssignments: object({ seats: arrayOf(seatAssignment) }),
  ConferenceOrders: object({
    orders: arrayOf(
      object({
        orderId: uuid,
        accessCode: { type: 'string' },
        status: { type: 'string', enum: ['pending', 'paid'] },
        total: { type: 'number' },
        registrant: nullable(personalInfo),
        seats: arrayOf(seatAssignment),
      }),
    ),
  }),
} as const satisfies Record<string, JsonSchema>;

export type SchemaName = keyof typeof schemas;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiResponse {
  readonly description: string;
  readonly schema?: SchemaName;
  readonly headers?: Readonly<Record<string, { readonly description: string }>>;
}

export interface ApiOperation {
  readonly method: HttpMethod;
  /** OpenAPI style: `/api/orders/{orderId}`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: 'Owner' | 'Registration' | 'Payments' | 'Documentation';
  /** Needs the owner's bearer token for the conference `{id}`. */
  readonly owner?: boolean;
  readonly body?: SchemaName;
  readonly query?: SchemaName;
  readonly responses: Readonly<Record<number, ApiResponse>>;
}

const noContent: ApiResponse = { description: 'Done.' };

/** Every route of the API, by operation id. */
export const operations = {
  createConference: {
    method: 'POST',
    path: '/api/conferences',
    summary: 'Create a conference (unpublished); the answer carries the owner access code.',
    tag: 'Owner',
    body: 'NewConference',
    responses: {
      201: { description: 'Created.', schema: 'ConferenceCreated' },
      409: { description: 'The slug is taken.' },
    },
  },
  ownerLogin: {
    method: 'POST',
    path: '/api/owner/login',
    summary: "Log in as a conference's owner with the owner e-mail and the conference access code.",
    tag: 'Owner',
    body: 'OwnerLogin',
    responses: {
      200: { description: 'A bearer token for the conference.', schema: 'OwnerSession' },
      401: { description: 'No conference has this owner e-mail and access code.' },
    },
  },
  getConference: {
    method: 'GET',
    path: '/api/conferences/{id}',
    summary: 'The conference as its owner sees it (access code, unpublished data, seat types).',
    tag: 'Owner',
    owner: true,
    responses: { 200: { description: 'The conference.', schema: 'OwnerConference' } },
  },
  updateConference: {
    method: 'PATCH',
    path: '/api/conferences/{id}',
    summary: 'Change some details of the conference (slug, owner and access code cannot change).',
    tag: 'Owner',
    owner: true,
    body: 'ConferenceChanges',
    responses: { 204: noContent },
  },
  publishConference: {
    method: 'POST',
    path: '/api/conferences/{id}/publish',
    summary: 'Publish the conference on the public site.',
    tag: 'Owner',
    owner: true,
    responses: { 204: noContent },
  },
  unpublishConference: {
    method: 'POST',
    path: '/api/conferences/{id}/unpublish',
    summary: 'Hide the conference from the public site.',
    tag: 'Owner',
    owner: true,
    responses: { 204: noContent },
  },
  conferenceOrders: {
    method: 'GET',
    path: '/api/conferences/{id}/orders',
    summary: 'Orders and attendees of the conference (expired orders are dropped).',
    tag: 'Owner',
    owner: true,
    responses: { 200: { description: 'The orders.', schema: 'ConferenceOrders' } },
  },
  createSeatType: {
    method: 'POST',
    path: '/api/conferences/{id}/seat-types',
    summary: 'Add a seat type with its quota and price.',
    tag: 'Owner',
    owner: true,
    body: 'NewSeatType',
    responses: { 201: { description: 'Created.', schema: 'Created' } },
  },
  updateSeatType: {
    method: 'PATCH',
    path: '/api/conferences/{id}/seat-types/{seatTypeId}',
    summary: 'Change the quota, price, name or description of a seat type.',
    tag: 'Owner',
    owner: true,
    body: 'SeatTypeChanges',
    responses: { 204: noContent },
  },
  publicConference: {
    method: 'GET',
    path: '/api/public/conferences/{slug}',
    summary: 'A published conference with its seat types, prices and availability.',
    tag: 'Registration',
    responses: { 200: { description: 'The conference.', schema: 'PublicConference' } },
  },
  placeOrder: {
    method: 'POST',
    path: '/api/public/conferences/{slug}/orders',
    summary: 'Order seats (Asynchronous Request-Reply: poll the order at Location until it is not pending).',
    tag: 'Registration',
    body: 'SeatSelection',
    responses: {
      202: {
        description: 'Accepted: the seats are being reserved.',
        schema: 'OrderAccepted',
        headers: { Location: { description: 'The order: /api/orders/{orderId}.' } },
      },
    },
  },
  findOrder: {
    method: 'GET',
    path: '/api/orders/find',
    summary: "Find an order by its registrant's e-mail and the order access code.",
    tag: 'Registration',
    query: 'FindOrderQuery',
    responses: { 200: { description: 'The order.', schema: 'Order' } },
  },
  getOrder: {
    method: 'GET',
    path: '/api/orders/{orderId}',
    summary: 'An order; with `wait`, answers once it is no longer pending (or when the wait is over).',
    tag: 'Registration',
    query: 'OrderQuery',
    responses: { 200: { description: 'The order.', schema: 'Order' } },
  },
  changeSeats: {
    method: 'PUT',
    path: '/api/orders/{orderId}/seats',
    summary: 'Change the seats of the order (reserved again asynchronously).',
    tag: 'Registration',
    body: 'SeatSelection',
    responses: {
      202: {
        description: 'Accepted: the seats are being reserved.',
        schema: 'OrderAccepted',
        headers: { Location: { description: 'The order: /api/orders/{orderId}.' } },
      },
      409: { description: 'The order is confirmed or expired.' },
    },
  },
  assignRegistrant: {
    method: 'PUT',
    path: '/api/orders/{orderId}/registrant',
    summary: 'Name the person who registers (and pays).',
    tag: 'Registration',
    body: 'PersonalInfo',
    responses: { 204: noContent },
  },
  startPayment: {
    method: 'POST',
    path: '/api/orders/{orderId}/payment',
    summary: 'Pay for a reserved order, or confirm it at once when it is free of charge.',
    tag: 'Payments',
    responses: {
      200: { description: 'The order was free and is confirmed.', schema: 'OrderConfirmed' },
      201: { description: 'A payment at the (simulated) processor.', schema: 'PaymentInitiated' },
      409: { description: 'The order is not reserved (pending, partial, expired, confirmed).' },
    },
  },
  acceptPayment: {
    method: 'POST',
    path: '/api/payments/{paymentId}/accept',
    summary: 'The simulated processor accepts the payment; the order is then confirmed.',
    tag: 'Payments',
    responses: { 204: noContent, 409: { description: 'The payment was rejected.' } },
  },
  rejectPayment: {
    method: 'POST',
    path: '/api/payments/{paymentId}/reject',
    summary: 'The simulated processor rejects the payment; the order may be paid again.',
    tag: 'Payments',
    responses: { 204: noContent, 409: { description: 'The payment was completed.' } },
  },
  getAssignments: {
    method: 'GET',
    path: '/api/orders/{orderId}/assignments',
    summary: 'The seats of a confirmed order and who attends on each.',
    tag: 'Registration',
    responses: { 200: { description: 'The seats.', schema: 'SeatAssignments' } },
  },
  assignSeat: {
    method: 'PUT',
    path: '/api/orders/{orderId}/assignments/{position}',
    summary: 'Name the attendee of a seat.',
    tag: 'Registration',
    body: 'PersonalInfo',
    responses: { 204: noContent },
  },
  unassignSeat: {
    method: 'DELETE',
    path: '/api/orders/{orderId}/assignments/{position}',
    summary: 'Leave a seat without attendee.',
    tag: 'Registration',
    responses: { 204: noContent },
  },
  openApi: {
    method: 'GET',
    path: '/api/openapi.json',
    summary: 'This document.',
    tag: 'Documentation',
    responses: { 200: { description: 'The OpenAPI 3.1 document.' } },
  },
} as const satisfies Record<string, ApiOperation>;

export type OperationId = keyof typeof operations;

const PARAMETERS: Readonly<Record<string, JsonSchema>> = {
  id: uuid,
  seatTypeId: uuid,
  orderId: uuid,
  paymentId: uuid,
  position: { type: 'integer', minimum: 0 },
  slug: {
    type: 'string',
    description:
      "A conference's slug (see NewConference); a path that cannot name one is simply not found (404).",
  },
};

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: SchemaName) => ({ content: { 'application/json': { schema: ref(name) } } });

function parametersOf(operation: ApiOperation): object[] {
  const inPath = [...operation.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: PARAMETERS[name as string] ?? { type: 'string' },
  }));
  if (operation.query === undefined) return inPath;
  const query: JsonSchema = schemas[operation.query];
  const inQuery = Object.entries(query.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: query.required?.includes(name) ?? false,
    schema,
  }));
  return [...inPath, ...inQuery];
}

function responsesOf(operation: ApiOperation): Record<string, object> {
  const responses: Record<string, object> = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    const schema: SchemaName | undefined = response.schema ?? (Number(status) >= 400 ? 'Error' : undefined);
    responses[status] = {
      description: response.description,
      ...(response.headers === undefined
        ? {}
        : {
            headers: Object.fromEntries(
              Object.entries(response.headers).map(([name, header]) => [
                name,
                { description: header.description, schema: { type: 'string' } },
              ]),
            ),
          }),
      ...(schema === undefined ? {} : json(schema)),
    };
  }
  const error = (description: string) => ({ description, ...json('Error') });
  if (operation.body !== undefined || operation.query !== undefined || operation.method !== 'GET')
    responses['400'] ??= { description: 'Invalid input: a message per field.', ...json('ValidationError') };
  if (operation.owner === true) {
    responses['401'] ??= error('No valid owner token.');
    responses['403'] ??= error('The token is for another conference.');
  }
  if (operation.path.includes('{')) responses['404'] ??= error('Nothing has this id (or slug).');
  // A write to what an id names appends to it, and may lose the race to other writes (concurrent-write.ts).
  if (operation.method !== 'GET' && /\{(?!slug\})\w+\}/.test(operation.path)) {
    const own = operation.responses[409]?.description;
    responses['409'] = error(
      own === undefined ? CONCURRENT_WRITE_MESSAGE : `${own} Or: ${CONCURRENT_WRITE_MESSAGE}`,
    );
  }
  return responses;
}

/** The OpenAPI 3.1 document of the API. */
export function openApiDocument(): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const [operationId, operation] of Object.entries(operations) as [string, ApiOperation][]) {
    const item = paths[operation.path] ?? {};
    paths[operation.path] = item;
    const parameters = parametersOf(operation);
    item[operation.method.toLowerCase()] = {
      operationId,
      summary: operation.summary,
      tags: [operation.tag],
      ...(parameters.length === 0 ? {} : { parameters }),
      ...(operation.body === undefined ? {} : { requestBody: { required: true, ...json(operation.body) } }),
      responses: responsesOf(operation),
      ...(operation.owner === true ? { security: [{ ownerToken: [] }] } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Contoso Conference Management System API',
      version: '1.0.0',
      description:
        'Conference owners manage conferences and seat types; registrants order seats, pay and assign them. ' +
        'Prices are decimal currency units; every 400 answer is `{ error, fields }`. Every text field has a ' +
        '`maxLength` (in characters) and a `pattern`: no control characters (a description may hold tabs and line ' +
        'breaks) and no unpaired UTF-16 surrogates.',
    },
    paths,
    components: {
      schemas,
      securitySchemes: {
        ownerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The token of POST /api/owner/login, valid for one conference.',
        },
      },
    },
  };
}
