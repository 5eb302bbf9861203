import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type ConferenceCommand,
  conferenceDecider,
  findSeatType,
  type SeatTypeFields,
} from './conference.js';
import type { ConferenceDetails, ConferenceEvent } from './contracts.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from './errors.js';
import { given as specGiven } from './spec.js';

const conferenceId = 'conf-1';
const seatTypeId = 'seat-type-1';

const { initialState, evolve } = conferenceDecider;
const fold = (events: readonly ConferenceEvent[], from = initialState()) => events.reduce(evolve, from);

/** given(history).when(command) → the events decided; `.state` is the state after the history. */
const given = (...history: ConferenceEvent[]) => specGiven(conferenceDecider, history);

const details: ConferenceDetails = {
  name: 'Contoso Conference',
  description: 'The annual conference of Contoso.',
  location: 'Redmond',
  tagline: 'Build it better',
  twitterSearch: '#contoso',
  startDate: '2026-05-04',
  endDate: '2026-05-06',
};
const owner = { name: 'Ann Lee', email: 'ann@example.com' };
const seat: SeatTypeFields = {
  name: 'General',
  description: 'Access to every talk',
  priceCents: 19_900,
  quantity: 100,
};

const createConference = (
  overrides: { slug?: string; owner?: typeof owner; details?: Partial<ConferenceDetails> } = {},
): ConferenceCommand => ({
  type: 'CreateConference',
  data: {
    conferenceId,
    accessCode: 'ABC234',
    slug: overrides.slug ?? 'contoso26',
    owner: overrides.owner ?? owner,
    details: { ...details, ...overrides.details },
  },
});
const updateConference = (changes: Partial<ConferenceDetails>): ConferenceCommand => ({
  type: 'UpdateConference',
  data: { conferenceId, details: { ...details, ...changes } },
});
const publish: ConferenceCommand = { type: 'PublishConference', data: { conferenceId } };
const unpublish: ConferenceCommand = { type: 'UnpublishConference', data: { conferenceId } };
const createSeat = (fields: Partial<SeatTypeFields> = {}, id = seatTypeId): ConferenceCommand => ({
  type: 'CreateSeat',
  data: { conferenceId, seatTypeId: id, ...seat, ...fields },
});
const updateSeat = (changes: Partial<SeatTypeFields>, id = seatTypeId): ConferenceCommand => ({
  type: 'UpdateSeat',
  data: { conferenceId, seatTypeId: id, ...changes },
});
const deleteSeat = (id = seatTypeId): ConferenceCommand => ({
  type: 'DeleteSeat',
  data: { conferenceId, seatTypeId: id },
});

const created: ConferenceEvent = {
  type: 'ConferenceCreated',
  data: { conferenceId, slug: 'contoso26', accessCode: 'ABC234', owner, ...details },
};
const published: ConferenceEvent = { type: 'ConferencePublished', data: { conferenceId } };
const unpublished: ConferenceEvent = { type: 'ConferenceUnpublished', data: { conferenceId } };
const seatCreated: ConferenceEvent = { type: 'SeatCreated', data: { conferenceId, seatTypeId, ...seat } };

/** The ValidationError's fields are exactly these (by name; a message when given). */
const invalid = (expected: Record<string, string | true>) => (error: unknown) => {
  assert.ok(error instanceof ValidationError);
  assert.deepEqual(Object.keys(error.fields).sort(), Object.keys(expected).sort());
  for (const [field, message] of Object.entries(expected)) {
    if (message !== true) assert.equal(error.fields[field], message);
  }
  return true;
};

describe('Conference: creating', () => {
  test('records the conference, unpublished and without seats', () => {
    const events = given().when(createConference());
    assert.deepEqual(events, [created]);
    assert.deepEqual(fold(events), {
      conferenceId,
      slug: 'contoso26',
      accessCode: 'ABC234',
      owner,
      details,
      isPublished: false,
      wasEverPublished: false,
      seatTypes: [],
    });
  });

  test('the tagline and Twitter search may be empty; the conference may last one day', () => {
    const command = createConference({
      details: { tagline: '', twitterSearch: '', endDate: details.startDate },
    });
    assert.equal(given().when(command).length, 1);
  });

  test('refuses a conference id that exists', () => {
    assert.throws(() => given(created).when(createConference()), ConflictError);
  });

  test('requires the name, description, location, slug, owner name and owner email, reporting them all', () => {
    const blank = createConference({
      slug: ' ',
      owner: { name: '', email: '' },
      details: { name: '', description: ' ', location: '' },
    });
    assert.throws(
      () => given().when(blank),
      invalid({
        name: 'The name field is required.',
        description: 'The description field is required.',
        location: 'The location field is required.',
        slug: 'The slug field is required.',
        ownerName: 'The ownerName field is required.',
        ownerEmail: 'The ownerEmail field is required.',
      }),
    );
  });

  test('the slug holds 1 to 50 lowercase letters, digits, hyphens and underscores, and no path of the sites', () => {
    for (const slug of ['contoso_2026', 'contoso-26', 'c', 'x'.repeat(50)])
      assert.equal(given().when(createConference({ slug })).length, 1, slug);
    for (const slug of ['Contoso_2026', 'contoso 26', 'contoso.26', 'café', 'a\u0000b']) {
      assert.throws(
        () => given().when(createConference({ slug })),
        invalid({ slug: 'The slug can only contain lowercase letters, digits, hyphens and underscores.' }),
      );
    }
    assert.throws(
      () => given().when(createConference({ slug: 'x'.repeat(51) })),
      invalid({ slug: 'The slug must be at most 50 characters long.' }),
    );
    for (const slug of ['api', 'manage', 'payment', 'health', 'metrics', 'create', 'locate', 'sign-in'])
      assert.throws(
        () => given().when(createConference({ slug })),
        invalid({ slug: `The slug cannot be ${slug}: the sites use that path.` }),
      );
  });

  test("the owner's email must look like one", () => {
    for (const email of ['ann', 'ann@example', 'ann@@example.com']) {
      assert.throws(
        () => given().when(createConference({ owner: { ...owner, email } })),
        invalid({ ownerEmail: 'The provided email address is not valid.' }),
      );
    }
  });

  test('the dates are real dates written yyyy-mm-dd', () => {
    for (const date of ['2026/05/04', '04-05-2026', '2026-5-4', '2026-02-30', '2026-13-01', '']) {
      assert.throws(
        () => given().when(createConference({ details: { startDate: date } })),
        invalid({ startDate: true }),
      );
      assert.throws(
        () => given().when(createConference({ details: { endDate: date } })),
        invalid({ endDate: true }),
      );
    }
  });

  test('the end date is not before the start date', () => {
    assert.throws(
      () => given().when(createConference({ details: { endDate: '2026-05-03' } })),
      invalid({ endDate: 'The end date cannot be before the start date.' }),
    );
  });

  test('keeps only the detail fields of the request', () => {
    const command = createConference();
    const withExtra = { ...command, data: { ...command.data, details: { ...details, isPublished: true } } };
    assert.deepEqual(given().when(withExtra as ConferenceCommand), [created]);
  });
});

describe('Conference: editing', () => {
  test('records the new details, keeping the slug, owner, access code and publishing', () => {
    const conference = given(created, published);
    const events = conference.when(updateConference({ name: 'Contoso 2026', location: 'Seattle' }));
    assert.deepEqual(events, [
      {
        type: 'ConferenceUpdated',
        data: { conferenceId, ...details, name: 'Contoso 2026', location: 'Seattle' },
      },
    ]);
    const after = fold(events, conference.state);
    assert.deepEqual(after, {
      ...conference.state,
      details: { ...details, name: 'Contoso 2026', location: 'Seattle' },
    });
    assert.equal(after?.isPublished, true);
  });

  test('the same details record nothing', () => {
    assert.deepEqual(given(created).when(updateConference({})), []);
  });

  test('the details are validated as on creation', () => {
    assert.throws(
      () => given(created).when(updateConference({ name: '', endDate: '2026-01-01' })),
      invalid({ name: true, endDate: true }),
    );
  });
});

describe('Conference: publishing', () => {
  test('publishing an unpublished conference publishes it, once', () => {
    const events = given(created).when(publish);
    assert.deepEqual(events, [published]);
    const after = fold([created, ...events]);
    assert.equal(after?.isPublished, true);
    assert.equal(after?.wasEverPublished, true);
    assert.deepEqual(given(created, published).when(publish), []);
  });

  test('unpublishing a published conference unpublishes it, once; it stays "ever published"', () => {
    const events = given(created, published).when(unpublish);
    assert.deepEqual(events, [unpublished]);
    const after = fold([created, published, ...events]);
    assert.equal(after?.isPublished, false);
    assert.equal(after?.wasEverPublished, true);
    assert.deepEqual(given(created, published, unpublished).when(unpublish), []);
    assert.deepEqual(given(created).when(unpublish), []);
  });

  test('a conference can be published again', () => {
    assert.deepEqual(given(created, published, unpublished).when(publish), [published]);
  });
});

describe('Conference: access code', () => {
  const rotate = (accessCode: string): ConferenceCommand => ({
    type: 'RotateAccessCode',
    data: { conferenceId, accessCode },
  });

  test('rotating records the new code, which replaces the old one', () => {
    const events = given(created, published).when(rotate('XYZ789'));
    assert.deepEqual(events, [{ type: 'AccessCodeRotated', data: { conferenceId, accessCode: 'XYZ789' } }]);
    const after = fold([created, published, ...events]);
    assert.equal(after?.accessCode, 'XYZ789');
    assert.equal(after?.isPublished, true);
    assert.equal(after?.slug, 'contoso26');
  });

  test('the new code must differ from the current one; the conference must exist', () => {
    assert.throws(() => given(created).when(rotate('ABC234')), InvalidOperationError);
    assert.throws(() => given().when(rotate('XYZ789')), NotFoundError);
  });
});

describe('Conference: seat types', () => {
  test('creating a seat type records it, published or not', () => {
    for (const history of [[created], [created, published], [created, published, unpublished]]) {
      const conference = given(...history);
      const events = conference.when(createSeat());
      assert.deepEqual(events, [seatCreated]);
      assert.deepEqual(fold(events, conference.state)?.seatTypes, [{ seatTypeId, ...seat }]);
    }
  });

  test('seat types keep the order they were created in', () => {
    const second: ConferenceEvent = {
      type: 'SeatCreated',
      data: { conferenceId, seatTypeId: 'seat-type-2', ...seat, name: 'Workshop' },
    };
    const state = fold([created, seatCreated, second]);
    assert.deepEqual(
      state?.seatTypes.map((type) => type.name),
      ['General', 'Workshop'],
    );
    assert.equal(state && findSeatType(state, 'seat-type-2')?.name, 'Workshop');
    assert.equal(state && findSeatType(state, 'unknown'), undefined);
  });

  test('refuses a seat type id that exists', () => {
    assert.throws(() => given(created, seatCreated).when(createSeat()), ConflictError);
  });

  test('a seat type has a name of 2 to 70 characters and a description of at most 250', () => {
    for (const name of ['GA', 'x'.repeat(70)])
      assert.equal(given(created).when(createSeat({ name })).length, 1);
    assert.equal(given(created).when(createSeat({ description: 'x'.repeat(250) })).length, 1);
    for (const name of ['', '  ', 'G', 'x'.repeat(71)]) {
      assert.throws(() => given(created).when(createSeat({ name })), invalid({ name: true }));
    }
    for (const description of ['', 'x'.repeat(251)]) {
      assert.throws(() => given(created).when(createSeat({ description })), invalid({ description: true }));
    }
  });

  test('a quota is a whole number from 0 to 100000, a price a whole number of cents up to 50000.00', () => {
    for (const quantity of [0, 100_000])
      assert.equal(given(created).when(createSeat({ quantity })).length, 1);
    for (const priceCents of [0, 5_000_000])
      assert.equal(given(created).when(createSeat({ priceCents })).length, 1);
    for (const quantity of [-1, 100_001, 1.5, Number.NaN]) {
      assert.throws(() => given(created).when(createSeat({ quantity })), invalid({ quantity: true }));
    }
    for (const priceCents of [-1, 5_000_001, 0.5]) {
      assert.throws(() => given(created).when(createSeat({ priceCents })), invalid({ price: true }));
    }
    assert.throws(
      () => given(created).when(createSeat({ name: '', description: '', quantity: -1, priceCents: -1 })),
      invalid({ name: true, description: true, quantity: true, price: true }),
    );
  });

  test('updating a seat type records all its new values and the quota before', () => {
    const conference = given(created, seatCreated);
    const events = conference.when(updateSeat({ quantity: 150 }));
    assert.deepEqual(events, [
      {
        type: 'SeatUpdated',
        data: { conferenceId, seatTypeId, ...seat, quantity: 150, previousQuantity: 100 },
      },
    ]);
    assert.deepEqual(fold(events, conference.state)?.seatTypes, [{ seatTypeId, ...seat, quantity: 150 }]);
    assert.deepEqual(conference.when(updateSeat({ name: 'Regular', priceCents: 25_000 })), [
      {
        type: 'SeatUpdated',
        data: {
          conferenceId,
          seatTypeId,
          ...seat,
          name: 'Regular',
          priceCents: 25_000,
          previousQuantity: 100,
        },
      },
    ]);
  });

  test('an update that changes nothing records nothing', () => {
    assert.deepEqual(given(created, seatCreated).when(updateSeat({})), []);
    assert.deepEqual(given(created, seatCreated).when(updateSeat({ ...seat })), []);
  });

  test('an update is validated with the values it leaves', () => {
    assert.throws(() => given(created, seatCreated).when(updateSeat({ name: 'G' })), invalid({ name: true }));
    assert.throws(
      () => given(created, seatCreated).when(updateSeat({ quantity: 100_001 })),
      invalid({ quantity: true }),
    );
  });

  test('deleting a seat type of a never-published conference records it with its quota', () => {
    const conference = given(created, seatCreated);
    const events = conference.when(deleteSeat());
    assert.deepEqual(events, [{ type: 'SeatDeleted', data: { conferenceId, seatTypeId, quantity: 100 } }]);
    assert.deepEqual(fold(events, conference.state)?.seatTypes, []);
  });

  test('seat types of a conference that was ever published cannot be deleted', () => {
    for (const history of [
      [created, seatCreated, published],
      [created, published, unpublished, seatCreated],
    ]) {
      assert.throws(
        () => given(...history).when(deleteSeat()),
        (error: unknown) =>
          error instanceof InvalidOperationError &&
          error.message === "Can't delete seats from a conference that has been published at least once.",
      );
    }
  });

  test('updating or deleting an unknown seat type is refused as not found', () => {
    for (const command of [updateSeat({ quantity: 1 }, 'unknown'), deleteSeat('unknown')]) {
      assert.throws(
        () => given(created, seatCreated).when(command),
        (error: unknown) => error instanceof NotFoundError && error.entityId === 'unknown',
      );
    }
  });
});

describe('Conference: one that does not exist', () => {
  test('refuses every command but creation as not found', () => {
    const commands = [updateConference({}), publish, unpublish, createSeat(), updateSeat({}), deleteSeat()];
    for (const command of commands) {
      assert.throws(
        () => given().when(command),
        (error: unknown) =>
          error instanceof NotFoundError &&
          error.entityType === 'Conference' &&
          error.entityId === conferenceId,
      );
    }
  });
});

describe('Conference state', () => {
  test('is JSON as is, and evolve leaves the state it was given unchanged', () => {
    const history: ConferenceEvent[] = [
      created,
      seatCreated,
      {
        type: 'SeatUpdated',
        data: { conferenceId, seatTypeId, ...seat, quantity: 5, previousQuantity: 100 },
      },
      { type: 'ConferenceUpdated', data: { conferenceId, ...details, name: 'Renamed' } },
      published,
      unpublished,
      { type: 'SeatCreated', data: { conferenceId, seatTypeId: 'seat-type-2', ...seat } },
    ];
    let state = initialState();
    for (const event of history) {
      const before = JSON.stringify(state);
      const next = evolve(state, event);
      assert.equal(JSON.stringify(state), before);
      state = next;
    }
    assert.deepEqual(JSON.parse(JSON.stringify(state)), state);
    assert.equal(state?.seatTypes.length, 2);
  });
});
