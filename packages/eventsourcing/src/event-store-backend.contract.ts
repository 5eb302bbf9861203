import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { EventStoreBackend, EventToStore, ParkedEvent, RecordedEvent } from './backend.js';
import { DuplicateEventIdError, WrongExpectedVersionError } from './errors.js';

/**
 * The executable definition of the EventStoreBackend port. Every backend's test file calls it with a factory that
 * opens a store over an empty database (the suite relies on global positions starting from nothing).
 */
export function eventStoreBackendContract(label: string, open: () => Promise<EventStoreBackend>): void {
  describe(`EventStoreBackend contract: ${label}`, () => {
    let store: EventStoreBackend;
    let counter = 0;
    const T0 = 1_750_000_000_000;
    const unique = (category = 'order') => `${category}-${++counter}`;
    const event = (type: string, data: unknown, id = `e-${++counter}`): EventToStore => ({
      id,
      type,
      data: JSON.stringify(data),
      metadata: JSON.stringify({ correlationId: 'c-1' }),
      schemaVersion: 1,
    });
    const types = (events: readonly RecordedEvent[]) => events.map((e) => e.type);

    before(async () => {
      store = await open();
    });
    after(async () => {
      await store?.close();
    });

    describe('append', () => {
      it('numbers a new stream from 1 and gives every event a global position', async () => {
        const name = unique();
        const head = await store.headPosition();
        const result = await store.append({
          streamName: name,
          expectedVersion: 'no-stream',
          events: [event('Placed', { n: 1 }), event('Paid', { n: 2 })],
          now: T0,
        });
        assert.equal(result.nextExpectedVersion, 2);
        assert.equal(result.written, true);
        assert.ok(result.firstPosition > head);
        assert.equal(result.lastPosition, result.firstPosition + 1);
        const events = await store.readStream(name);
        assert.deepEqual(
          events.map((e) => [
            e.type,
            e.data,
            e.streamVersion,
            e.globalPosition,
            e.recordedAt,
            e.schemaVersion,
          ]),
          [
            ['Placed', { n: 1 }, 1, result.firstPosition, T0, 1],
            ['Paid', { n: 2 }, 2, result.lastPosition, T0, 1],
          ],
        );
        assert.deepEqual(events[0]?.metadata, { correlationId: 'c-1' });
        assert.equal(events[0]?.streamName, name);
        assert.equal(await store.streamVersion(name), 2);
        assert.equal(await store.headPosition(), result.lastPosition);
      });

      it('appends at an exact expected version and refuses a stale one, writing nothing', async () => {
        const name = unique();
        await store.append({ streamName: name, expectedVersion: 0, events: [event('A', 1)], now: T0 });
        await store.append({ streamName: name, expectedVersion: 1, events: [event('B', 2)], now: T0 });
        const stale = store.append({
          streamName: name,
          expectedVersion: 1,
          events: [event('C', 3), event('D', 4)],
          now: T0,
        });
        await assert.rejects(stale, (error: unknown) => {
          assert.ok(error instanceof WrongExpectedVersionError);
          assert.equal(error.streamName, name);
          assert.equal(error.expected, 1);
          assert.equal(error.actual, 2);
          return true;
        });
        assert.deepEqual(types(await store.readStream(name)), ['A', 'B']);
      });

      it("checks 'no-stream', 'stream-exists' and 'any'", async () => {
        const name = unique();
        await assert.rejects(
          store.append({
            streamName: name,
            expectedVersion: 'stream-exists',
            events: [event('A', 1)],
            now: T0,
          }),
          WrongExpectedVersionError,
        );
        await assert.rejects(
          store.append({ streamName: name, expectedVersion: 3, events: [event('A', 1)], now: T0 }),
          WrongExpectedVersionError,
        );
        await store.append({
          streamName: name,
          expectedVersion: 'no-stream',
          events: [event('A', 1)],
          now: T0,
        });
        await assert.rejects(
          store.append({ streamName: name, expectedVersion: 'no-stream', events: [event('B', 2)], now: T0 }),
          WrongExpectedVersionError,
        );
        await store.append({
          streamName: name,
          expectedVersion: 'stream-exists',
          events: [event('B', 2)],
          now: T0,
        });
        const last = await store.append({
          streamName: name,
          expectedVersion: 'any',
          events: [event('C', 3)],
          now: T0,
        });
        assert.equal(last.nextExpectedVersion, 3);
        assert.deepEqual(types(await store.readStream(name)), ['A', 'B', 'C']);
      });

      it('recognises the same events appended again and does not store them twice', async () => {
        const name = unique();
        const batch = [event('A', 1), event('B', 2)];
        const first = await store.append({
          streamName: name,
          expectedVersion: 'no-stream',
          events: batch,
          now: T0,
        });
        await store.append({ streamName: name, expectedVersion: 2, events: [event('C', 3)], now: T0 });
        for (const expectedVersion of ['no-stream', 'any', 0] as const) {
          const again = await store.append({ streamName: name, expectedVersion, events: batch, now: T0 + 1 });
          assert.equal(again.written, false);
          assert.equal(again.firstPosition, first.firstPosition);
          assert.equal(again.lastPosition, first.lastPosition);
          assert.equal(again.nextExpectedVersion, 3);
        }
        // The tail of a batch alone is a repeat too.
        const tail = await store.append({
          streamName: name,
          expectedVersion: 1,
          events: [batch[1] as EventToStore],
          now: T0,
        });
        assert.equal(tail.written, false);
        assert.deepEqual(types(await store.readStream(name)), ['A', 'B', 'C']);
      });

      it('refuses an event id stored elsewhere, or mixed with new events, writing nothing', async () => {
        const name = unique();
        const taken = event('A', 1);
        await store.append({ streamName: name, expectedVersion: 'any', events: [taken], now: T0 });
        const other = unique(`lonely${counter}`);
        await assert.rejects(
          store.append({
            streamName: other,
            expectedVersion: 'any',
            events: [event('X', 0), taken],
            now: T0,
          }),
          (error: unknown) => error instanceof DuplicateEventIdError && error.eventId === taken.id,
        );
        assert.equal(await store.streamVersion(other), 0);
        await assert.rejects(
          store.append({ streamName: name, expectedVersion: 'any', events: [taken, event('B', 2)], now: T0 }),
          DuplicateEventIdError,
        );
        assert.deepEqual(types(await store.readStream(name)), ['A']);
        assert.deepEqual(await store.listStreams({ category: other.split('-')[0] }), []);
      });

      it('keeps data and metadata exactly (unicode, nesting, numbers, null)', async () => {
        const name = unique();
        const data = {
          text: 'zoë ✓ 😀 "quoted" \\ back',
          nested: { list: [1, 2.5, -3e-7, null, true] },
          empty: {},
        };
        await store.append({
          streamName: name,
          expectedVersion: 'any',
          events: [
            {
              id: `u-${++counter}`,
              type: 'Unicode',
              data: JSON.stringify(data),
              metadata: JSON.stringify({ causationId: 'x', tags: ['a'] }),
              schemaVersion: 3,
            },
            event('Scalar', 42),
            event('Null', null),
          ],
          now: T0,
        });
        const [first, second, third] = await store.readStream(name);
        assert.deepEqual(first?.data, data);
        assert.deepEqual(first?.metadata, { causationId: 'x', tags: ['a'] });
        assert.equal(first?.schemaVersion, 3);
        assert.equal(second?.data, 42);
        assert.equal(third?.data, null);
      });

      it('treats an empty append as a no-op that still checks the version', async () => {
        const name = unique();
        const result = await store.append({
          streamName: name,
          expectedVersion: 'no-stream',
          events: [],
          now: T0,
        });
        assert.equal(result.nextExpectedVersion, 0);
        assert.equal(result.written, false);
        await assert.rejects(
          store.append({ streamName: name, expectedVersion: 'stream-exists', events: [], now: T0 }),
          WrongExpectedVersionError,
        );
        assert.equal(await store.streamVersion(name), 0);
      });

      it('lets exactly one of many concurrent appends at the same version win', async () => {
        const name = unique();
        await store.append({
          streamName: name,
          expectedVersion: 'any',
          events: [event('Start', 0)],
          now: T0,
        });
        const outcomes = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            store.append({ streamName: name, expectedVersion: 1, events: [event('Next', i)], now: T0 }),
          ),
        );
        assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
        for (const outcome of outcomes) {
          if (outcome.status === 'rejected') assert.ok(outcome.reason instanceof WrongExpectedVersionError);
        }
        assert.equal(await store.streamVersion(name), 2);
      });

      it("serialises concurrent 'any' appends to one stream without losing any", async () => {
        const name = unique();
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.append({
              streamName: name,
              expectedVersion: 'any',
              events: [event('E', i), event('F', i)],
              now: T0,
            }),
          ),
        );
        const events = await store.readStream(name);
        assert.deepEqual(
          events.map((e) => e.streamVersion),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        // Each append's two events stay together and in order; positions grow along the stream (appends to other
        // streams may take positions in between: they are not promised to be contiguous).
        for (let i = 0; i < 20; i += 2) {
          assert.equal(events[i]?.type, 'E');
          assert.equal(events[i + 1]?.type, 'F');
          assert.equal(events[i + 1]?.data, events[i]?.data);
        }
        for (let i = 1; i < 20; i++) {
          assert.ok(
            (events[i] as RecordedEvent).globalPosition > (events[i - 1] as RecordedEvent).globalPosition,
          );
        }
      });
    });

    describe('reads', () => {
      it('reads a stream forwards and backwards, from a version, up to a count', async () => {
        const name = unique();
        await store.append({
          streamName: name,
          expectedVersion: 'any',
          events: [1, 2, 3, 4, 5].map((n) => event(`E${n}`, n)),
          now: T0,
        });
        const versions = (events: RecordedEvent[]) => events.map((e) => e.streamVersion);
        assert.deepEqual(versions(await store.readStream(name)), [1, 2, 3, 4, 5]);
        assert.deepEqual(versions(await store.readStream(name, { from: 3 })), [3, 4, 5]);
        assert.deepEqual(versions(await store.readStream(name, { from: 2, maxCount: 2 })), [2, 3]);
        assert.deepEqual(versions(await store.readStream(name, { direction: 'backwards' })), [5, 4, 3, 2, 1]);
        assert.deepEqual(
          versions(await store.readStream(name, { direction: 'backwards', from: 3 })),
          [3, 2, 1],
        );
        assert.deepEqual(
          versions(await store.readStream(name, { direction: 'backwards', maxCount: 1 })),
          [5],
        );
        assert.deepEqual(versions(await store.readStream(name, { from: 9 })), []);
        assert.deepEqual(await store.readStream(unique()), []);
      });

      it('reads all events in global order after a position', async () => {
        const a = unique();
        const b = unique();
        const start = await store.headPosition();
        await store.append({ streamName: a, expectedVersion: 'any', events: [event('A1', 1)], now: T0 });
        await store.append({
          streamName: b,
          expectedVersion: 'any',
          events: [event('B1', 1), event('B2', 2)],
          now: T0,
        });
        await store.append({ streamName: a, expectedVersion: 'any', events: [event('A2', 2)], now: T0 });
        const all = await store.readAll({ after: start });
        assert.deepEqual(types(all), ['A1', 'B1', 'B2', 'A2']);
        assert.deepEqual(
          all.map((e) => e.streamName),
          [a, b, b, a],
        );
        for (let i = 1; i < all.length; i++) {
          assert.ok((all[i] as RecordedEvent).globalPosition > (all[i - 1] as RecordedEvent).globalPosition);
        }
        const page = await store.readAll({ after: start, maxCount: 2 });
        assert.deepEqual(types(page), ['A1', 'B1']);
        const rest = await store.readAll({ after: (page[1] as RecordedEvent).globalPosition });
        assert.deepEqual(types(rest), ['B2', 'A2']);
        assert.deepEqual(await store.readAll({ after: await store.headPosition() }), []);
        // A following read may answer with fewer, but with at least the first event after its position.
        const followed = await store.readAll({ after: start, following: true });
        assert.ok(followed.length > 0);
        assert.deepEqual(types(followed), types(all).slice(0, followed.length));
      });

      it('lists streams by category, in name order, in pages', async () => {
        const category = `cat${++counter}`;
        for (const id of ['b', 'a', 'c']) {
          await store.append({
            streamName: `${category}-${id}`,
            expectedVersion: 'any',
            events: [event('X', id)],
            now: T0 + 5,
          });
        }
        await store.append({
          streamName: `${category}-a`,
          expectedVersion: 'any',
          events: [event('Y', 1)],
          now: T0 + 9,
        });
        await store.append({
          streamName: `${category}x-z`,
          expectedVersion: 'any',
          events: [event('X', 1)],
          now: T0,
        });
        const listed = await store.listStreams({ category });
        assert.deepEqual(listed, [
          { streamName: `${category}-a`, category, version: 2, createdAt: T0 + 5, updatedAt: T0 + 9 },
          { streamName: `${category}-b`, category, version: 1, createdAt: T0 + 5, updatedAt: T0 + 5 },
          { streamName: `${category}-c`, category, version: 1, createdAt: T0 + 5, updatedAt: T0 + 5 },
        ]);
        const page = await store.listStreams({ category, after: `${category}-a`, limit: 1 });
        assert.deepEqual(
          page.map((s) => s.streamName),
          [`${category}-b`],
        );
        const bare = `bare${++counter}`;
        await store.append({ streamName: bare, expectedVersion: 'any', events: [event('X', 1)], now: T0 });
        assert.deepEqual(
          (await store.listStreams({ category: bare })).map((s) => s.streamName),
          [bare],
        );
      });
    });

    describe('checkpoints and snapshots', () => {
      it('stores and replaces named checkpoints', async () => {
        const name = `checkpoint-${++counter}`;
        assert.equal(await store.loadCheckpoint(name), undefined);
        await store.storeCheckpoint(name, 7);
        assert.equal(await store.loadCheckpoint(name), 7);
        await store.storeCheckpoint(name, 12);
        assert.equal(await store.loadCheckpoint(name), 12);
      });

      it('stores and replaces a stream snapshot', async () => {
        const streamName = unique();
        assert.equal(await store.loadSnapshot(streamName), undefined);
        const snapshot = {
          streamName,
          version: 3,
          state: JSON.stringify({ total: 3 }),
          schemaVersion: 1,
          takenAt: T0,
        };
        await store.storeSnapshot(snapshot);
        assert.deepEqual(await store.loadSnapshot(streamName), snapshot);
        const newer = { ...snapshot, version: 9, state: '{"total":9}', schemaVersion: 2, takenAt: T0 + 1 };
        await store.storeSnapshot(newer);
        assert.deepEqual(await store.loadSnapshot(streamName), newer);
      });
    });

    describe('parked events', () => {
      const parked = (
        subscription: string,
        position: number,
        extra: Partial<ParkedEvent> = {},
      ): ParkedEvent => ({
        subscription,
        position,
        eventId: `e-${position}`,
        eventType: 'OrderPlaced',
        streamName: `order-${position}`,
        keys: [`order-${position}`, 'tenant-ä'],
        reason: 'failed',
        error: 'TypeError: boom 💥',
        attempts: 10,
        parkedAt: T0 + position,
        retryRequested: false,
        ...extra,
      });

      it('stores, replaces, lists in position order and pages them', async () => {
        const name = `parking-${++counter}`;
        assert.deepEqual(await store.listParked(name), []);
        await store.parkEvents([
          parked(name, 30),
          parked(name, 7),
          parked(name, 12, { reason: 'blocked', error: '' }),
        ]);
        await store.parkEvents([parked(name, 7, { attempts: 11, error: 'again', parkedAt: T0 + 99 })]);
        assert.deepEqual(await store.listParked(name), [
          parked(name, 7, { attempts: 11, error: 'again', parkedAt: T0 + 99 }),
          parked(name, 12, { reason: 'blocked', error: '' }),
          parked(name, 30),
        ]);
        assert.deepEqual(
          (await store.listParked(name, { after: 7, limit: 1 })).map((p) => p.position),
          [12],
        );
        assert.deepEqual(await store.listParked(`${name}-other`), []);
      });

      it('marks some or all for a retry, removes some or all, and counts them per subscription', async () => {
        const name = `parking-${++counter}`;
        const other = `parking-${++counter}`;
        await store.parkEvents([parked(name, 1), parked(name, 2), parked(name, 3), parked(other, 1)]);
        assert.deepEqual(await store.summarizeParked(name), { parked: 3, retryRequested: 0 });
        assert.equal(await store.requestParkedRetry(name, [2, 99]), 1);
        assert.deepEqual(
          (await store.listParked(name)).map((p) => p.retryRequested),
          [false, true, false],
        );
        assert.deepEqual(await store.summarizeParked(name), { parked: 3, retryRequested: 1 });
        assert.deepEqual(await store.summarizeParked(other), { parked: 1, retryRequested: 0 });
        assert.equal(await store.requestParkedRetry(name, 'all'), 3);
        assert.ok((await store.listParked(name)).every((p) => p.retryRequested));
        const counts = await store.countParked();
        assert.equal(counts[name], 3);
        assert.equal(counts[other], 1);
        assert.equal(await store.removeParked(name, [1, 3, 4]), 2);
        assert.deepEqual(
          (await store.listParked(name)).map((p) => p.position),
          [2],
        );
        assert.equal(await store.removeParked(name, 'all'), 1);
        assert.equal((await store.countParked())[name], undefined);
        assert.deepEqual(await store.summarizeParked(name), { parked: 0, retryRequested: 0 });
        assert.equal((await store.listParked(other)).length, 1);
        assert.equal(await store.removeParked(name, 'all'), 0);
      });
    });

    describe('watch', () => {
      it('calls watchers after an append commits, until they unsubscribe', async () => {
        let calls = 0;
        let wake: () => void = () => {};
        const stop = await store.watch(() => {
          calls++;
          wake();
        });
        const woken = new Promise<void>((resolve) => {
          wake = resolve;
        });
        const before = calls;
        await store.append({
          streamName: unique(),
          expectedVersion: 'any',
          events: [event('W', 1)],
          now: T0,
        });
        await woken;
        assert.ok(calls > before);
        stop();
        const after = calls;
        await store.append({
          streamName: unique(),
          expectedVersion: 'any',
          events: [event('W', 2)],
          now: T0,
        });
        assert.equal(await store.streamVersion(unique()), 0);
        assert.equal(calls, after);
      });
    });
  });
}
