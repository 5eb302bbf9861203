import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { CommandBus, EventStore, MemoryEventStoreBackend, type RecordedEvent } from '@stratus/eventsourcing';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { SEATS_AVAILABILITY_COMMANDS } from '../domain/contracts.js';
import { remainingSeats } from '../domain/seats-availability.js';
import {
  createRepositories,
  integrationHandler,
  integrationLane,
  registerCommandHandlers,
} from './services.js';

describe('availability commands', () => {
  async function seatsWorker() {
    const clock = new VirtualClock({ now: Date.UTC(2026, 0, 1) });
    const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
    const appends: number[] = [];
    const appendToStream = store.appendToStream.bind(store);
    store.appendToStream = ((streamName, events, options) => {
      if (streamName.startsWith('seatsAvailability-')) appends.push(events.length);
      return appendToStream(streamName, events, options);
    }) as EventStore['appendToStream'];
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock });
    await messaging.createQueue('seats', { sessions: true });
    const routing = {
      messaging,
      clock,
      queueOf: () => 'seats',
      sessionOf: (command: { data: unknown }) =>
        `seatsAvailability-${(command.data as { conferenceId: string }).conferenceId}`,
    };
    // Sent from one bus (without handlers: queued), handled by the worker's.
    const bus = new CommandBus(routing);
    const worker = new CommandBus(routing);
    const repositories = createRepositories(store);
    registerCommandHandlers(
      worker,
      { repositories, clock, reservationWindowMs: 900_000, prices: async () => new Map() },
      SEATS_AVAILABILITY_COMMANDS,
    );
    return { store, messaging, bus, worker, repositories, appends };
  }

  it("decides a conference's queued backlog together, in order, in one append", async () => {
    const { store, messaging, bus, worker, repositories, appends } = await seatsWorker();
    const conferenceId = uuidv7();
    const seatTypeId = uuidv7();
    const sent = [
      await bus.send('AddSeats', { conferenceId, seatTypeId, quantity: 10 }),
      ...(await Promise.all(
        [4, 4, 4].map(() =>
          bus.send('MakeSeatReservation', {
            conferenceId,
            reservationId: uuidv7(),
            seats: [{ seatTypeId, quantity: 4 }],
          }),
        ),
      )),
    ];
    assert.ok(sent.every((outcome) => outcome === 'queued'));
    const consumer = worker.consume('seats', { sessionBatch: 16 });
    await waitUntil(async () => (await messaging.queue('seats').stats()).length === 0, 'the backlog handled');
    await consumer.close();
    assert.deepEqual(appends, [4], 'the four commands, one event each, in one append');
    const events = await store.readStream(`seatsAvailability-${conferenceId}`);
    // Reserved in the order sent: the last reservation gets what was left.
    assert.deepEqual(
      events.map((event) => event.type),
      ['AvailableSeatsChanged', 'SeatsReserved', 'SeatsReserved', 'SeatsReserved'],
    );
    const granted = events
      .slice(1)
      .map((event) => (event.data as { reservationDetails: unknown }).reservationDetails);
    assert.deepEqual(granted, [
      [{ seatTypeId, quantity: 4 }],
      [{ seatTypeId, quantity: 4 }],
      [{ seatTypeId, quantity: 2 }],
    ]);
    // Each event names the command it answers, as when handled alone.
    assert.equal(new Set(events.map((event) => event.metadata.correlationId)).size, 4);
    const { state } = await repositories.seatsAvailability.load(conferenceId);
    assert.deepEqual(remainingSeats(state), [{ seatTypeId, quantity: 0 }]);
  });
});

describe('the OrderConfirmed reaction', () => {
  it("creates the seat assignments from the event's seats without reading the order, and from the order for an event recorded without them", async () => {
    const clock = new VirtualClock({ now: Date.UTC(2026, 0, 1) });
    const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
    const orderReads: string[] = [];
    const readStream = store.readStream.bind(store);
    store.readStream = ((streamName, query) => {
      if (streamName.startsWith('order-')) orderReads.push(streamName);
      return readStream(streamName, query);
    }) as EventStore['readStream'];
    const repositories = createRepositories(store);
    const react = integrationHandler({ repositories, send: async () => {} });
    const seatTypeId = uuidv7();
    const confirmed = async (data: object) => {
      const [recorded] = await store.readStream(`order-${(data as { orderId: string }).orderId}`, {
        direction: 'backwards',
        maxCount: 1,
      });
      return recorded as RecordedEvent;
    };
    // An order placed and confirmed, as the order aggregate records it.
    const place = async (orderId: string, confirmation: object) => {
      await store.appendToStream(`order-${orderId}`, [
        {
          type: 'OrderPlaced',
          data: {
            orderId,
            conferenceId: uuidv7(),
            seats: [{ seatTypeId, quantity: 2 }],
            reservationAutoExpiration: 0,
            accessCode: 'ABCDEF',
          },
        },
        { type: 'OrderConfirmed', data: confirmation },
      ]);
      return confirmed(confirmation);
    };

    const withSeats = uuidv7();
    const event = await place(withSeats, { orderId: withSeats, seats: [{ seatTypeId, quantity: 2 }] });
    orderReads.length = 0;
    await react(event);
    assert.deepEqual(orderReads, [], 'the seats came with the event');
    const created = await repositories.seatAssignments.load(withSeats);
    assert.equal(created.version, 1);

    const old = uuidv7();
    const oldEvent = await place(old, { orderId: old });
    orderReads.length = 0;
    await react(oldEvent);
    assert.ok(orderReads.length > 0, 'the seats came from the order');
    assert.equal((await repositories.seatAssignments.load(old)).version, 1);
  });
});

describe('the integration lanes', () => {
  const recorded = (type: string, data: object): RecordedEvent =>
    ({ type, data, id: uuidv7(), streamName: 's', streamVersion: 1, globalPosition: 1 }) as RecordedEvent;

  it("keeps a conference's seat changes in one lane, gives each confirmed order its own, and none to other events", () => {
    const [conference, other, order] = [uuidv7(), uuidv7(), uuidv7()];
    const seatLanes = ['SeatCreated', 'SeatUpdated', 'SeatDeleted'].map((type) =>
      integrationLane(recorded(type, { conferenceId: conference, seatTypeId: uuidv7() })),
    );
    assert.equal(new Set(seatLanes).size, 1);
    assert.notEqual(integrationLane(recorded('SeatCreated', { conferenceId: other })), seatLanes[0]);
    const orderLane = integrationLane(recorded('OrderConfirmed', { orderId: order }));
    assert.ok(orderLane !== undefined && !seatLanes.includes(orderLane));
    assert.notEqual(integrationLane(recorded('OrderConfirmed', { orderId: uuidv7() })), orderLane);
    assert.equal(
      integrationLane(recorded('OrderPlaced', { orderId: order, conferenceId: conference })),
      undefined,
    );
  });
});
