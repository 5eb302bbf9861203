/**
 * The JSON API's routes as data, by operation id: api.ts registers exactly these (with the schemas they name), and
 * openapi.ts documents them, so the document cannot drift from the routes.
 */
import type { RateLimitKind } from './limits/abuse-limits.js';
import type { SchemaName } from './schemas/api-schemas.js';

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
      429: { description: 'This client sent too many bad signatures (RATE_LIMIT_WEBHOOK_FAILURES).' },
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
