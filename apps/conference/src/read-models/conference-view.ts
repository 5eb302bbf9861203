/**
 * The conference read model (the Journey's ConferenceViewModelGenerator): one document per conference with its seat
 * types and how many seats of each are still available, plus one per slug (read by id, which readers can cache until
 * it changes), one per conference found by its owner login (e-mail and current access code), and a summary of each
 * published conference, so the public list reads a page of them, never every conference. The runner
 * applies each event exactly once (the position commits with the documents), so the Journey's version guards
 * against duplicates are not needed here.
 */
import type {
  DocumentKey,
  DocumentProjectionDefinition,
  DocumentSession,
  RecordedEvent,
} from '@stratus/eventsourcing';
import type { ConferenceEvent, Owner, SeatQuantity, SeatsAvailabilityEvent } from '../domain/contracts.js';

export interface SeatTypeView {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly priceCents: number;
  /** The quota the owner set. */
  readonly quantity: number;
  /** Seats not held by any reservation (may lag the availability aggregate slightly; never negative here). */
  readonly available: number;
}

export interface ConferenceView {
  readonly id: string;
  readonly slug: string;
  readonly name: string;
  readonly description: string;
  readonly location: string;
  readonly tagline: string;
  readonly twitterSearch: string;
  readonly startDate: string;
  readonly endDate: string;
  readonly owner: Owner;
  readonly accessCode: string;
  readonly isPublished: boolean;
  readonly wasEverPublished: boolean;
  readonly seatTypes: readonly SeatTypeView[];
  /** Remaining seats per type as the availability aggregate counts them (may go below 0 after seats are removed). */
  readonly remaining: Readonly<Record<string, number>>;
}

/** A published conference as the public list shows it (id: the conference's, so the list is in creation order). */
export interface PublishedConferenceView {
  readonly id: string;
  readonly slug: string;
  readonly name: string;
  readonly tagline: string;
  readonly location: string;
  readonly startDate: string;
  readonly endDate: string;
}

/** Finds a conference by its slug (which never changes). */
export interface ConferenceSlugView {
  readonly conferenceId: string;
}

/** Finds a conference by its owner's e-mail and access code (its lookup, `ownerLoginId`; the id is the conference's). */
export interface OwnerLoginView {
  readonly conferenceId: string;
}

export const CONFERENCE = 'conference';
export const CONFERENCE_SLUG = 'conferenceSlug';
export const OWNER_LOGIN = 'ownerLogin';
/** Only while the conference is published. */
export const PUBLISHED_CONFERENCE = 'publishedConference';

/** The lookup key of an owner login: e-mail compared case-insensitively, the code exactly. */
export function ownerLoginId(email: string, accessCode: string): string {
  return `${email.trim().toLowerCase()}|${accessCode}`;
}

type ViewEvent = RecordedEvent<(ConferenceEvent | SeatsAvailabilityEvent)['type']>;

function conferenceIdOf(event: ViewEvent): string {
  return (event.data as { conferenceId: string }).conferenceId;
}

function applyRemaining(view: ConferenceView, changes: readonly SeatQuantity[]): ConferenceView {
  const remaining = { ...view.remaining };
  for (const change of changes)
    remaining[change.seatTypeId] = (remaining[change.seatTypeId] ?? 0) + change.quantity;
  return {
    ...view,
    remaining,
    seatTypes: view.seatTypes.map((seat) => ({ ...seat, available: Math.max(remaining[seat.id] ?? 0, 0) })),
  };
}

function update(
  session: DocumentSession,
  id: string,
  change: (view: ConferenceView) => ConferenceView,
): ConferenceView {
  const view = session.get<ConferenceView>(CONFERENCE, id);
  // Events of one conference arrive in order and ConferenceCreated comes first, so a miss is a bug worth seeing.
  if (view === undefined) throw new Error(`conference view: no conference ${id}`);
  const next = change(view);
  session.put(CONFERENCE, id, next, next.slug);
  return next;
}

/** The events that change what the public list shows of a conference. */
const LISTED = new Set(['ConferenceUpdated', 'ConferencePublished', 'ConferenceUnpublished']);

/** Puts the conference's summary on the public list as it now is, or takes it off once unpublished. */
function relist(session: DocumentSession, view: ConferenceView): void {
  const { id, slug, name, tagline, location, startDate, endDate } = view;
  if (view.isPublished) {
    const summary: PublishedConferenceView = { id, slug, name, tagline, location, startDate, endDate };
    session.put(PUBLISHED_CONFERENCE, id, summary);
  } else if (session.get(PUBLISHED_CONFERENCE, id) !== undefined) session.delete(PUBLISHED_CONFERENCE, id);
}

/** The conference's owner login, found by the owner's e-mail and the current access code only. */
function putOwnerLogin(session: DocumentSession, view: ConferenceView): void {
  const login: OwnerLoginView = { conferenceId: view.id };
  session.put(OWNER_LOGIN, view.id, login, ownerLoginId(view.owner.email, view.accessCode));
}

export const conferenceView: DocumentProjectionDefinition = {
  name: 'conferences',
  // 2: slug documents. 3: owner logins by conference, found by e-mail and code (the code can change); or (a parallel
  // 3) the published conferences' summaries. 4: both.
  version: 4,
  eventTypes: [
    'ConferenceCreated',
    'ConferenceUpdated',
    'ConferencePublished',
    'ConferenceUnpublished',
    'AccessCodeRotated',
    'SeatCreated',
    'SeatUpdated',
    'SeatDeleted',
    'AvailableSeatsChanged',
    'SeatsReserved',
    'SeatsReservationCancelled',
  ],
  documentsOf(event): DocumentKey[] {
    const id = conferenceIdOf(event as ViewEvent);
    const keys: DocumentKey[] = [{ collection: CONFERENCE, id }];
    if (LISTED.has(event.type)) keys.push({ collection: PUBLISHED_CONFERENCE, id });
    if (event.type === 'ConferenceCreated')
      keys.push({ collection: CONFERENCE_SLUG, id: (event.data as { slug: string }).slug });
    if (event.type === 'ConferenceCreated' || event.type === 'AccessCodeRotated')
      keys.push({ collection: OWNER_LOGIN, id });
    return keys;
  },
  apply(recorded, session) {
    const event = recorded as unknown as ConferenceEvent | SeatsAvailabilityEvent;
    const id = conferenceIdOf(recorded as ViewEvent);
    switch (event.type) {
      case 'ConferenceCreated': {
        const { conferenceId, slug, owner, accessCode, ...details } = event.data;
        const view: ConferenceView = {
          id: conferenceId,
          slug,
          ...details,
          owner,
          accessCode,
          isPublished: false,
          wasEverPublished: false,
          seatTypes: [],
          remaining: {},
        };
        session.put(CONFERENCE, id, view, slug);
        session.put(CONFERENCE_SLUG, slug, { conferenceId } satisfies ConferenceSlugView);
        putOwnerLogin(session, view);
        return;
      }
      case 'ConferenceUpdated': {
        const { conferenceId: _, ...details } = event.data;
        return relist(
          session,
          update(session, id, (view) => ({ ...view, ...details })),
        );
      }
      case 'ConferencePublished':
        return relist(
          session,
          update(session, id, (view) => ({ ...view, isPublished: true, wasEverPublished: true })),
        );
      case 'ConferenceUnpublished':
        return relist(
          session,
          update(session, id, (view) => ({ ...view, isPublished: false })),
        );
      case 'AccessCodeRotated':
        return update(session, id, (view) => {
          const next = { ...view, accessCode: event.data.accessCode };
          putOwnerLogin(session, next);
          return next;
        });
      case 'SeatCreated': {
        const { seatTypeId, name, description, priceCents, quantity } = event.data;
        return update(session, id, (view) => ({
          ...view,
          seatTypes: [
            ...view.seatTypes,
            {
              id: seatTypeId,
              name,
              description,
              priceCents,
              quantity,
              available: Math.max(view.remaining[seatTypeId] ?? 0, 0),
            },
          ],
        }));
      }
      case 'SeatUpdated': {
        const { seatTypeId, name, description, priceCents, quantity } = event.data;
        return update(session, id, (view) => ({
          ...view,
          seatTypes: view.seatTypes.map((seat) =>
            seat.id === seatTypeId ? { ...seat, name, description, priceCents, quantity } : seat,
          ),
        }));
      }
      case 'SeatDeleted':
        return update(session, id, (view) => ({
          ...view,
          seatTypes: view.seatTypes.filter((seat) => seat.id !== event.data.seatTypeId),
        }));
      case 'AvailableSeatsChanged':
        return update(session, id, (view) => applyRemaining(view, event.data.seats));
      case 'SeatsReserved':
      case 'SeatsReservationCancelled':
        return update(session, id, (view) => applyRemaining(view, event.data.availableSeatsChanged));
      case 'SeatsReservationCommitted':
        return;
    }
  },
};
