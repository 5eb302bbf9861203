/**
 * Every input of the system as one schema, shared by the JSON API (its route schemas and the OpenAPI document) and
 * the web forms (./forms.ts): a form field has the name of the API's property and the same rules. What only the
 * domain can judge (blank after trimming, e-mail syntax, dates in order, a seat type's name of 2 or more
 * characters, a free slug) it judges after these, on both.
 */
import { MAX_SEATS_PER_TYPE } from '../../domain/contracts.js';
import { arrayOf, date, object, price, uuid } from './json-schema.js';
import { email, line, lines, slug, slugLookup, TEXT_LIMITS } from './text.js';

const personalInfo = object({
  firstName: line(TEXT_LIMITS.name),
  lastName: line(TEXT_LIMITS.name),
  email,
});

const conferenceDetails = {
  name: line(TEXT_LIMITS.name),
  description: lines(TEXT_LIMITS.description),
  location: line(TEXT_LIMITS.name),
  tagline: line(TEXT_LIMITS.tagline),
  twitterSearch: line(TEXT_LIMITS.name),
  startDate: date,
  endDate: date,
};

const seatType = {
  name: line(TEXT_LIMITS.seatName, 'At least 2 characters.'),
  description: line(TEXT_LIMITS.seatDescription),
  quantity: { type: 'integer', minimum: 0, maximum: 100_000 },
  price,
};

const accessCode = line(TEXT_LIMITS.accessCode);

/** The API's request bodies and query strings, by the name of their OpenAPI component. */
export const apiInputs = {
  NewConference: object(
    {
      ...conferenceDetails,
      slug,
      ownerName: line(TEXT_LIMITS.name),
      ownerEmail: email,
    },
    ['name', 'slug', 'description', 'location', 'startDate', 'endDate', 'ownerName', 'ownerEmail'],
  ),
  ConferenceChanges: object(conferenceDetails, []),
  OwnerLogin: object({ email, accessCode }),
  NewSeatType: object(seatType),
  SeatTypeChanges: object(seatType, []),
  SeatSelection: object({
    seats: arrayOf(
      object({
        seatTypeId: line(TEXT_LIMITS.seatTypeId),
        quantity: {
          type: 'integer',
          minimum: 0,
          maximum: MAX_SEATS_PER_TYPE,
          description: `At most ${MAX_SEATS_PER_TYPE} seats of one type per order.`,
        },
      }),
      100,
    ),
  }),
  PersonalInfo: personalInfo,
  OrderQuery: {
    type: 'object',
    properties: {
      wait: {
        type: 'number',
        minimum: 0,
        maximum: 30,
        description:
          'Seconds to wait for the order to leave `pending` (or reach a status of `until`) before answering; at ' +
          'most 30 (a long poll is capped: a larger value is refused with 400).',
      },
      until: {
        type: 'string',
        pattern:
          '^(pending|reserved|partiallyReserved|confirmed|rejected|expired)(,(pending|reserved|partiallyReserved|confirmed|rejected|expired))*$',
        description: 'With `wait`: the statuses to wait for, comma-separated (default: any but `pending`).',
      },
    },
  },
  FindOrderQuery: {
    type: 'object',
    required: ['email', 'accessCode'],
    properties: { email, accessCode },
  },
} as const;

/**
 * What only the sites take: the cursor of the conference list, the owner's sign-in form (slug and access code; the
 * locate form is the API's OwnerLogin), the order of the registration form, and what the simulated payment processor
 * is handed.
 */
export const siteInputs = {
  OwnerSignIn: object({ slug: slugLookup, accessCode }),
  /** The order of the registration form: a new one's id comes with its token (the seats are fields of their own). */
  OrderForm: object({ orderId: uuid, orderToken: line(TEXT_LIMITS.orderToken) }, ['orderId']),
  ConferenceListQuery: object({ after: uuid, before: uuid }, []),
  /** The simulated processor's page: which payment. */
  ProcessorPayment: object({ paymentId: uuid }),
  /** The registrant's choice on it. */
  ProcessorDecision: object({ paymentId: uuid, outcome: { type: 'string', enum: ['accepted', 'rejected'] } }),
} as const;
