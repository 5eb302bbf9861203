/**
 * Every JSON schema of the API by name: the inputs the routes validate (./inputs.ts) and the answers, which are
 * documentation only (OpenAPI 3.1 nullable types). They are the OpenAPI document's components.
 */
import { apiInputs } from './inputs.js';
import { arrayOf, date, type JsonSchema, nullable, object, price, uuid } from './json-schema.js';

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
