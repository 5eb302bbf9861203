/**
 * The JSON API as data: the JSON schemas the routes validate with, the table of operations the plugin registers, and
 * the OpenAPI 3.1 document built from both (served at /api/openapi.json). The document cannot drift from the
 * routes: api.ts registers exactly `operations`, with these very schema objects.
 *
 * Request schemas stay within what Fastify's Ajv (draft-07) compiles; response schemas are documentation only and
 * use OpenAPI 3.1 (JSON Schema 2020-12) nullable types.
 */

import { CONCURRENT_WRITE_MESSAGE } from './concurrent-write.js';
import type { RateLimitKind } from './limits/abuse-limits.js';
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
  AccessCodeRotated: object({
    accessCode: {
      type: 'string',
      description: 'The new access code: the old one no longer opens the conference.',
    },
    token: {
      type: 'string',
      description:
        "A new owner token: tokens signed for the old code (this one's too) are no longer accepted.",
    },
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
  OrderAccess: object({
    orderId: uuid,
    orderToken: {
      type: 'string',
      description:
        "The order's token: send it as `Authorization: Bearer <orderToken>` to every /api/orders/{orderId} route.",
    },
  }),
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
  PaymentOutcome: object({
    paymentId: uuid,
    status: { type: 'string', enum: ['completed', 'rejected'] },
    amountCents: { type: 'integer', minimum: 1 },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
  }),
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
  /** Needs the order's token for `{orderId}` as a bearer token (else 404). */
  readonly order?: boolean;
  /** Counts against this rate limit of the client (429 past it). */
  readonly limit?: RateLimitKind;
  readonly body?: SchemaName;
  readonly query?: SchemaName;
  readonly responses: Readonly<Record<number, ApiResponse>>;
  /** Its body is read as text (to check a signature over it): routed apart, by payment-callbacks.ts. */
  readonly raw?: boolean;
}

const noContent: ApiResponse = { description: 'Done.' };

/** Every route of the API, by operation id. */
export const operations = {
  createConference: {
    method: 'POST',
    path: '/api/conferences',
    summary: 'Create a conference (unpublished); the answer carries the owner access code.',
    tag: 'Owner',
    limit: 'conferences',
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
    limit: 'signIn',
    body: 'OwnerLogin',
    responses: {
      200: { description: 'A bearer token for the conference.', schema: 'OwnerSession' },
      401: { description: 'No conference has this owner e-mail and access code.' },
      429: {
        description: 'Too many log-ins from this client, or too many wrong codes for this e-mail or client.',
      },
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
  rotateAccessCode: {
    method: 'POST',
    path: '/api/conferences/{id}/access-code',
    summary:
      'Replace the access code with a new random one; the old code and the tokens signed for it stop working.',
    tag: 'Owner',
    owner: true,
    responses: { 200: { description: 'The new access code and owner token.', schema: 'AccessCodeRotated' } },
  },
  conferenceOrders: {
    method: 'GET',
    path: '/api/conferences/{id}/orders',
    summary: 'Orders and attendees of the conference (expired orders are dropped).',
    tag: 'Owner',
    owner: true,
    responses: { 200: { description: 'The orders.', schema: 'ConferenceOrders' } },
  },
  ownerAssignRegistrant: {
    method: 'PUT',
    path: '/api/conferences/{id}/orders/{orderId}/registrant',
    summary:
      'Change the registrant of an order of the conference, even a confirmed one (only its owner can then).',
    tag: 'Owner',
    owner: true,
    body: 'PersonalInfo',
    responses: { 204: noContent },
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
    summary:
      'Order seats (Asynchronous Request-Reply: poll the order at Location, with its token, until it is not pending).',
    tag: 'Registration',
    limit: 'orders',
    body: 'SeatSelection',
    responses: {
      202: {
        description:
          'Accepted: the seats are being reserved. Keep the order token: the order answers only to it.',
        schema: 'OrderAccess',
        headers: { Location: { description: 'The order: /api/orders/{orderId}.' } },
      },
      429: {
        description:
          'Too many orders from this client, or it holds the most orders or seats of this conference one client may.',
      },
    },
  },
  findOrder: {
    method: 'GET',
    path: '/api/orders/find',
    summary: "Find an order by its registrant's e-mail and the order access code: answers the order's token.",
    tag: 'Registration',
    limit: 'orderLookup',
    query: 'FindOrderQuery',
    responses: {
      200: { description: 'The order and its token.', schema: 'OrderAccess' },
      404: { description: 'No order has this registrant e-mail and access code.' },
      429: {
        description: 'Too many look-ups from this client, or too many wrong codes for this e-mail or client.',
      },
    },
  },
  getOrder: {
    method: 'GET',
    path: '/api/orders/{orderId}',
    summary: 'An order; with `wait`, answers once it is no longer pending (or when the wait is over).',
    tag: 'Registration',
    order: true,
    query: 'OrderQuery',
    responses: { 200: { description: 'The order.', schema: 'Order' } },
  },
  changeSeats: {
    method: 'PUT',
    path: '/api/orders/{orderId}/seats',
    summary: 'Change the seats of the order (reserved again asynchronously).',
    tag: 'Registration',
    order: true,
    body: 'SeatSelection',
    responses: {
      202: {
        description: 'Accepted: the seats are being reserved.',
        schema: 'OrderAccepted',
        headers: { Location: { description: 'The order: /api/orders/{orderId}.' } },
      },
      409: { description: 'The order is confirmed or expired.' },
      429: { description: 'More seats than one client may hold of this conference.' },
    },
  },
  assignRegistrant: {
    method: 'PUT',
    path: '/api/orders/{orderId}/registrant',
    summary:
      'Name the person who registers (and pays); once the order is confirmed, only the owner can change it.',
    tag: 'Registration',
    order: true,
    body: 'PersonalInfo',
    responses: { 204: noContent, 409: { description: 'The order is confirmed.' } },
  },
  startPayment: {
    method: 'POST',
    path: '/api/orders/{orderId}/payment',
    summary: 'Pay for a reserved order, or confirm it at once when it is free of charge.',
    tag: 'Payments',
    order: true,
    responses: {
      200: { description: 'The order was free and is confirmed.', schema: 'OrderConfirmed' },
      201: { description: 'A payment at the (simulated) processor.', schema: 'PaymentInitiated' },
      409: { description: 'The order is not reserved (pending, partial, expired, confirmed).' },
    },
  },
  paymentWebhook: {
    method: 'POST',
    path: '/api/payments/webhook',
    summary:
      "The payment processor's callback with a payment's outcome, signed: header `Stratus-Signature: " +
      't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" under PAYMENTS_WEBHOOK_SECRET>`, at most 5 ' +
      'minutes old. Served unless PAYMENTS=off.',
    tag: 'Payments',
    body: 'PaymentOutcome',
    raw: true,
    responses: {
      204: noContent,
      401: { description: 'No valid signature, or one outside the replay window.' },
      409: { description: 'The payment was settled the other way already.' },
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
    order: true,
    responses: { 200: { description: 'The seats.', schema: 'SeatAssignments' } },
  },
  assignSeat: {
    method: 'PUT',
    path: '/api/orders/{orderId}/assignments/{position}',
    summary: 'Name the attendee of a seat.',
    tag: 'Registration',
    order: true,
    body: 'PersonalInfo',
    responses: { 204: noContent },
  },
  unassignSeat: {
    method: 'DELETE',
    path: '/api/orders/{orderId}/assignments/{position}',
    summary: 'Leave a seat without attendee.',
    tag: 'Registration',
    order: true,
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

/** What a 429 answer carries (the abuse limits: README). */
const RATE_LIMITED_HEADERS = Object.fromEntries(
  [
    ['Retry-After', 'Seconds until the request can succeed.'],
    ['RateLimit-Limit', 'The quota of the limit that refused.'],
    ['RateLimit-Remaining', 'What is left of it (0).'],
    ['RateLimit-Reset', 'Seconds until it is whole again.'],
    ['RateLimit-Policy', 'The limit: name, quota (q) and window in seconds (w).'],
    ['RateLimit', 'The limit: name, remaining (r) and seconds to reset (t).'],
  ].map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
);

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
  if (operation.order === true)
    responses['404'] ??= error('No order has this id, or the order token is missing or wrong.');
  if (operation.path.includes('{')) responses['404'] ??= error('Nothing has this id (or slug).');
  if (operation.limit !== undefined)
    responses['429'] ??= { description: 'Too many requests from this client.' };
  // A write to what an id names appends to it, and may lose the race to other writes (concurrent-write.ts).
  if (operation.method !== 'GET' && /\{(?!slug\})\w+\}/.test(operation.path)) {
    const own = operation.responses[409]?.description;
    responses['409'] = error(
      own === undefined ? CONCURRENT_WRITE_MESSAGE : `${own} Or: ${CONCURRENT_WRITE_MESSAGE}`,
    );
  }
  for (const [status, response] of Object.entries(responses)) {
    if (status === '429')
      responses[status] = { ...response, headers: RATE_LIMITED_HEADERS, ...json('Error') };
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
      ...(operation.order === true ? { security: [{ orderToken: [] }] } : {}),
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
        'breaks) and no unpaired UTF-16 surrogates. An order answers only to its token; abuse limits answer 429 ' +
        'with Retry-After.',
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
        orderToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The orderToken of placing the order or of GET /api/orders/find, valid for that order: without it, 404.',
        },
      },
    },
  };
}
