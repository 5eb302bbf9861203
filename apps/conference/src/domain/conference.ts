/**
 * Conference: what the owner manages, its details, publishing and seat types (stream `conference-<conferenceId>`).
 * The Journey keeps this in CRUD tables and publishes events after saving; here the events are the record.
 *
 * Unlike the Journey, seat events are recorded whether or not the conference was ever published: seats become
 * available as soon as they exist, and the public site hides unpublished conferences.
 */
import type { Decider } from '@stratus/eventsourcing';
import type { ConferenceDetails, ConferenceEvent, Owner } from './contracts.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from './errors.js';
import { EMAIL_PATTERN } from './personal-info.js';
import { slugProblem } from './slug.js';

export interface SeatTypeFields {
  readonly name: string;
  readonly description: string;
  readonly priceCents: number;
  /** How many seats of this type the conference offers. */
  readonly quantity: number;
}

export interface ConferenceSeatType extends SeatTypeFields {
  readonly seatTypeId: string;
}

export type ConferenceCommand =
  | {
      readonly type: 'CreateConference';
      readonly data: {
        readonly conferenceId: string;
        /** The owner's 6-character access code (see access-code.ts). */
        readonly accessCode: string;
        /** Must be unique among conferences: checked by the caller, not here. */
        readonly slug: string;
        readonly owner: Owner;
        readonly details: ConferenceDetails;
      };
    }
  | {
      readonly type: 'UpdateConference';
      readonly data: { readonly conferenceId: string; readonly details: ConferenceDetails };
    }
  | { readonly type: 'PublishConference'; readonly data: { readonly conferenceId: string } }
  | { readonly type: 'UnpublishConference'; readonly data: { readonly conferenceId: string } }
  | {
      readonly type: 'RotateAccessCode';
      /** The new code (see access-code.ts), drawn by the caller. */
      readonly data: { readonly conferenceId: string; readonly accessCode: string };
    }
  | {
      readonly type: 'CreateSeat';
      readonly data: SeatTypeFields & { readonly conferenceId: string; readonly seatTypeId: string };
    }
  | {
      readonly type: 'UpdateSeat';
      /** The fields to change; the others keep their values. */
      readonly data: Partial<SeatTypeFields> & { readonly conferenceId: string; readonly seatTypeId: string };
    }
  | {
      readonly type: 'DeleteSeat';
      readonly data: { readonly conferenceId: string; readonly seatTypeId: string };
    };

export interface Conference {
  readonly conferenceId: string;
  readonly slug: string;
  readonly accessCode: string;
  readonly owner: Owner;
  readonly details: ConferenceDetails;
  readonly isPublished: boolean;
  /** Stays true after unpublishing: seat types can no longer be deleted. */
  readonly wasEverPublished: boolean;
  /** In the order they were created. */
  readonly seatTypes: readonly ConferenceSeatType[];
}

/** Null until the conference is created. */
export type ConferenceState = Conference | null;

export const conferenceDecider: Decider<ConferenceState, ConferenceEvent, ConferenceCommand> = {
  initialState: () => null,

  evolve(state, event) {
    if (event.type === 'ConferenceCreated') {
      const { conferenceId, slug, accessCode, owner } = event.data;
      return {
        conferenceId,
        slug,
        accessCode,
        owner: { name: owner.name, email: owner.email },
        details: detailsOf(event.data),
        isPublished: false,
        wasEverPublished: false,
        seatTypes: [],
      };
    }
    // Only a broken stream has events before its creation.
    if (state === null) throw new NotFoundError('Conference', event.data.conferenceId);
    switch (event.type) {
      case 'ConferenceUpdated':
        return { ...state, details: detailsOf(event.data) };
      case 'ConferencePublished':
        return { ...state, isPublished: true, wasEverPublished: true };
      case 'ConferenceUnpublished':
        return { ...state, isPublished: false };
      case 'AccessCodeRotated':
        return { ...state, accessCode: event.data.accessCode };
      case 'SeatCreated':
        return { ...state, seatTypes: [...state.seatTypes, seatTypeOf(event.data)] };
      case 'SeatUpdated': {
        const updated = seatTypeOf(event.data);
        const seatTypes = state.seatTypes.map((seat) =>
          seat.seatTypeId === updated.seatTypeId ? updated : seat,
        );
        return { ...state, seatTypes };
      }
      case 'SeatDeleted': {
        const { seatTypeId } = event.data;
        return { ...state, seatTypes: state.seatTypes.filter((seat) => seat.seatTypeId !== seatTypeId) };
      }
    }
  },

  decide(command, state) {
    const { conferenceId } = command.data;
    if (command.type === 'CreateConference') {
      if (state !== null)
        throw new ConflictError(`Conference ${JSON.stringify(conferenceId)} already exists.`);
      const { accessCode, slug, owner, details } = command.data;
      throwIfAny(newConferenceProblems({ slug, owner, details }));
      const data = { conferenceId, slug, accessCode, owner: { name: owner.name, email: owner.email } };
      return [{ type: 'ConferenceCreated', data: { ...data, ...detailsOf(details) } }];
    }
    if (state === null) throw new NotFoundError('Conference', conferenceId);
    switch (command.type) {
      case 'UpdateConference': {
        const details = detailsOf(command.data.details);
        throwIfAny(detailsProblems(details));
        if (sameValues(details, state.details)) return [];
        return [{ type: 'ConferenceUpdated', data: { conferenceId, ...details } }];
      }
      case 'PublishConference':
        return state.isPublished ? [] : [{ type: 'ConferencePublished', data: { conferenceId } }];
      case 'UnpublishConference':
        return state.isPublished ? [{ type: 'ConferenceUnpublished', data: { conferenceId } }] : [];
      case 'RotateAccessCode': {
        const { accessCode } = command.data;
        if (accessCode === state.accessCode)
          throw new InvalidOperationError('The new access code must differ from the current one.');
        return [{ type: 'AccessCodeRotated', data: { conferenceId, accessCode } }];
      }
      case 'CreateSeat': {
        const seat = seatTypeOf(command.data);
        if (findSeatType(state, seat.seatTypeId) !== undefined)
          throw new ConflictError(`Seat type ${JSON.stringify(seat.seatTypeId)} already exists.`);
        throwIfAny(seatProblems(seat));
        return [{ type: 'SeatCreated', data: { conferenceId, ...seat } }];
      }
      case 'UpdateSeat': {
        const { seatTypeId, name, description, priceCents, quantity } = command.data;
        const before = existingSeatType(state, seatTypeId);
        const after = seatTypeOf({
          seatTypeId,
          name: name ?? before.name,
          description: description ?? before.description,
          priceCents: priceCents ?? before.priceCents,
          quantity: quantity ?? before.quantity,
        });
        throwIfAny(seatProblems(after));
        if (sameValues(after, before)) return [];
        return [{ type: 'SeatUpdated', data: { conferenceId, ...after, previousQuantity: before.quantity } }];
      }
      case 'DeleteSeat': {
        const { seatTypeId, quantity } = existingSeatType(state, command.data.seatTypeId);
        // Orders may hold seats of a type once the conference was out in public.
        if (state.wasEverPublished)
          throw new InvalidOperationError(
            "Can't delete seats from a conference that has been published at least once.",
          );
        return [{ type: 'SeatDeleted', data: { conferenceId, seatTypeId, quantity } }];
      }
    }
  },
};

export function findSeatType(conference: Conference, seatTypeId: string): ConferenceSeatType | undefined {
  return conference.seatTypes.find((seat) => seat.seatTypeId === seatTypeId);
}

function existingSeatType(conference: Conference, seatTypeId: string): ConferenceSeatType {
  const seat = findSeatType(conference, seatTypeId);
  if (seat === undefined) throw new NotFoundError('SeatType', seatTypeId);
  return seat;
}

/** Only the detail fields (an event's data or a request body carry others). */
function detailsOf(source: ConferenceDetails): ConferenceDetails {
  const { name, description, location, tagline, twitterSearch, startDate, endDate } = source;
  return { name, description, location, tagline, twitterSearch, startDate, endDate };
}

function seatTypeOf(source: ConferenceSeatType): ConferenceSeatType {
  const { seatTypeId, name, description, priceCents, quantity } = source;
  return { seatTypeId, name, description, priceCents, quantity };
}

/** Two flat records with the same keys hold the same values. */
function sameValues<T extends object>(a: T, b: T): boolean {
  return (Object.keys(a) as (keyof T)[]).every((key) => a[key] === b[key]);
}

/** Problems by the API's field names: what the pure checks below answer, for a form to show them all at once. */
export type Problems = Record<string, string>;

function throwIfAny(problems: Problems): void {
  if (Object.keys(problems).length > 0) throw new ValidationError(problems);
}

/** What is wrong with a new conference's slug, owner and details (the caller checks that the slug is free). */
export function newConferenceProblems(conference: {
  readonly slug: string;
  readonly owner: Owner;
  readonly details: ConferenceDetails;
}): Problems {
  const { slug, owner, details } = conference;
  const problems = detailsProblems(details);
  const slugIssue = slugProblem(slug);
  if (slugIssue !== undefined) problems.slug = slugIssue;
  if (isBlank(owner.name)) problems.ownerName = required('ownerName');
  if (isBlank(owner.email)) problems.ownerEmail = required('ownerEmail');
  else if (!EMAIL_PATTERN.test(owner.email)) problems.ownerEmail = 'The provided email address is not valid.';
  return problems;
}

export function detailsProblems(details: ConferenceDetails): Problems {
  const problems: Problems = {};
  for (const field of ['name', 'description', 'location'] as const) {
    if (isBlank(details[field])) problems[field] = required(field);
  }
  for (const field of ['tagline', 'twitterSearch'] as const) {
    if (typeof details[field] !== 'string') problems[field] = `The ${field} field must be text.`;
  }
  const startValid = isIsoDate(details.startDate);
  const endValid = isIsoDate(details.endDate);
  if (!startValid) problems.startDate = 'The start date must be a date written yyyy-mm-dd.';
  if (!endValid) problems.endDate = 'The end date must be a date written yyyy-mm-dd.';
  // yyyy-mm-dd strings sort as the dates do.
  if (startValid && endValid && details.endDate < details.startDate)
    problems.endDate = 'The end date cannot be before the start date.';
  return problems;
}

export function seatProblems({ name, description, priceCents, quantity }: SeatTypeFields): Problems {
  const problems: Problems = {};
  if (isBlank(name)) problems.name = required('name');
  else if (name.length < 2 || name.length > 70) problems.name = 'The name must be 2 to 70 characters long.';
  if (isBlank(description)) problems.description = required('description');
  else if (description.length > 250)
    problems.description = 'The description must be at most 250 characters long.';
  if (!isIntegerBetween(quantity, 0, 100_000))
    problems.quantity = 'The quantity must be a whole number from 0 to 100000.';
  if (!isIntegerBetween(priceCents, 0, 5_000_000))
    problems.price = 'The price must be from 0.00 to 50000.00.';
  return problems;
}

function required(field: string): string {
  return `The ${field} field is required.`;
}

function isBlank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}

function isIntegerBetween(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/** A real calendar date written yyyy-mm-dd (not 2025-02-30). */
function isIsoDate(value: unknown): value is string {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}
