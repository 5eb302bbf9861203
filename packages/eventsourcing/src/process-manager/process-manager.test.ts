import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { WrongExpectedVersionError } from '../errors.js';
import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import type { ProcessDefinition, ProcessEvent, ProcessOutcome } from './definition.js';
import { InvalidProcessOutcomeError, ProcessDispatchError } from './errors.js';
import { countStreamReads, orderEvents, RecordingScheduler, RecordingSender } from './fixtures/helpers.js';
import { registrationProcess } from './fixtures/registration.js';
import { type ProcessCacheOptions, ProcessManager, type ProcessManagerEvent } from './process-manager.js';
import { DISPATCHED_RECORD, STEP_RECORD } from './process-stream.js';

const T0 = Date.UTC(2026, 0, 5, 8, 0);

type ReminderEvent =
  | ProcessEvent<'Started' | 'Snoozed' | 'Dismissed' | 'Broken', { id: string }>
  | ProcessEvent<'Remind', { id: string }>;

/** A reminder: remind in 1 s; a snooze replaces the reminder, a dismissal cancels it; each reminder counts. */
const reminder: ProcessDefinition<{ reminded: number }, ReminderEvent> = {
  name: 'reminder',
  startedBy: ['Started'],
  correlate: (event) => event.data.id,
  initialState: () => ({ reminded: 0 }),
  handle(state, event): ProcessOutcome<{ reminded: number }, ReminderEvent> | undefined {
    const remind = { event: { type: 'Remind' as const, data: { id: event.data.id } }, afterMs: 1000 };
    switch (event.type) {
      case 'Started':
      case 'Snoozed':
        return { schedule: [remind] };
      case 'Dismissed':
        return { cancelTimeouts: ['Remind'] };
      case 'Remind':
        return { state: { reminded: state.reminded + 1 } };
      case 'Broken':
        return { send: [{ type: '', data: {} }] };
    }
  },
};

function setup<State, Event extends ProcessEvent>(
  definition: ProcessDefinition<State, Event>,
  options: { timeouts?: boolean; store?: EventStore; maxAttempts?: number; cache?: ProcessCacheOptions } = {},
) {
  const clock = new VirtualClock({ now: T0 });
  const store = options.store ?? new EventStore({ backend: new MemoryEventStoreBackend(), clock });
  const sender = new RecordingSender();
  const scheduler = new RecordingScheduler();
  const manager = new ProcessManager<State, Event>({
    definition,
    store,
    commands: sender,
    ...(options.timeouts === false ? {} : { timeouts: scheduler }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.cache === undefined ? {} : { cache: options.cache }),
  });
  const seen: ProcessManagerEvent[] = [];
  manager.events.on((event) => seen.push(event));
  return { clock, store, sender, scheduler, manager, seen };
}

describe('ProcessManager', () => {
  it('refuses bad options and bad input with InvalidOptionsError', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    const commands = new RecordingSender();
    const make = (options: object) => () =>
      new ProcessManager({ store, commands, definition: reminder, ...options });
    assert.throws(make({ definition: undefined }), InvalidOptionsError);
    assert.throws(make({ definition: { ...reminder, name: 'has-dash' } }), /definition.name/);
    assert.throws(make({ definition: { ...reminder, startedBy: 'Started' } }), /startedBy/);
    assert.throws(make({ definition: { ...reminder, handle: 1 } }), /definition.handle/);
    assert.throws(make({ store: {} }), /store/);
    assert.throws(make({ commands: {} }), /commands/);
    assert.throws(make({ timeouts: {} }), /timeouts/);
    assert.throws(make({ maxAttempts: 0 }), /maxAttempts/);
    for (const cache of [null, 5, 'yes']) assert.throws(make({ cache }), /cache/);
    for (const maxEntries of [0, -1, 1.5, '10', Number.NaN])
      assert.throws(make({ cache: { maxEntries } }), (error: unknown) => {
        assert.ok(error instanceof InvalidOptionsError);
        assert.match(error.message, /cache\.maxEntries/);
        return true;
      });
    make({ cache: {} })();
    make({ cache: { maxEntries: 1 } })();
    const { manager } = setup(reminder);
    await assert.rejects(manager.handle({ type: 'Started', data: { id: 'a' } } as never), /event.id/);
    await assert.rejects(manager.handle({ id: 'x', data: { id: 'a' } } as never), /event.type/);
    await assert.rejects(
      manager.deliverTimeout({
        processName: 'other',
        processId: 'a',
        timeoutId: 't',
        type: 'Remind',
        data: {},
        dueAt: 0,
      }),
      InvalidOptionsError,
    );
    assert.throws(() => manager.streamName(''), InvalidOptionsError);
  });

  it('stores nothing when the definition throws or returns an invalid outcome', async () => {
    const { store, manager } = setup(reminder, { timeouts: false });
    await assert.rejects(
      manager.handle({ id: 'e-1', type: 'Started', data: { id: 'a' } }),
      (error: unknown) => {
        assert.ok(error instanceof InvalidProcessOutcomeError);
        assert.match(error.message, /no timeout scheduler/);
        return true;
      },
    );
    assert.equal(await store.streamVersion('reminder-a'), 0);
    const throwing = setup({
      ...reminder,
      handle: () => {
        throw new Error('domain says no');
      },
    });
    await assert.rejects(
      throwing.manager.handle({ id: 'e-3', type: 'Started', data: { id: 'b' } }),
      /domain says no/,
    );
    assert.equal(await throwing.store.streamVersion('reminder-b'), 0);
  });

  it('rejects a malformed command in an outcome', async () => {
    const { store, manager } = setup({ ...reminder, startedBy: ['Broken'] });
    await assert.rejects(
      manager.handle({ id: 'e-1', type: 'Broken', data: { id: 'a' } }),
      (error: unknown) =>
        error instanceof InvalidProcessOutcomeError && /send\[0\]\.type/.test(error.message),
    );
    assert.equal(await store.streamVersion('reminder-a'), 0);
  });

  it('brings a timeout back once; a superseded or cancelled one is dropped', async () => {
    const { scheduler, manager, seen } = setup(reminder);
    await manager.handle({ id: 'e-1', type: 'Started', data: { id: 'a' } });
    await manager.handle({ id: 'e-2', type: 'Snoozed', data: { id: 'a' } });
    const [first, second] = scheduler.scheduled;
    assert.ok(first && second && first.timeoutId !== second.timeoutId);
    assert.equal(second.dueAt, T0 + 1000, 'afterMs from the manager clock');
    assert.deepEqual(await manager.deliverTimeout(first), {
      outcome: 'ignored',
      processId: 'a',
      reason: 'stale-timeout',
    });
    assert.equal((await manager.deliverTimeout(second)).outcome, 'handled');
    assert.equal((await manager.deliverTimeout(second)).outcome, 'duplicate', 'a redelivered timeout');
    assert.equal((await manager.read('a')).state.reminded, 1);

    await manager.handle({ id: 'e-3', type: 'Snoozed', data: { id: 'a' } });
    await manager.handle({ id: 'e-4', type: 'Dismissed', data: { id: 'a' } });
    const third = scheduler.scheduled[2];
    assert.ok(third);
    assert.equal((await manager.deliverTimeout(third)).outcome, 'ignored', 'cancelled');
    assert.equal((await manager.read('a')).state.reminded, 1);
    assert.equal(seen.filter((e) => e.type === 'ignored' && e.reason === 'stale-timeout').length, 2);
    // A timeout for a process that does not exist is dropped too.
    assert.equal((await manager.deliverTimeout({ ...second, processId: 'nobody' })).outcome, 'ignored');
  });

  it('does not route events it does not correlate, nor the records of its own streams', async () => {
    const { manager } = setup(registrationProcess);
    assert.deepEqual(await manager.handle({ id: 'x', type: 'SomethingElse', data: {} } as never), {
      outcome: 'unrouted',
      processId: undefined,
    });
    const own = { ...orderEvents('o-1').placed('x', T0 + 60_000), streamName: 'registration-o-1' };
    assert.equal((await manager.handle(own)).outcome, 'unrouted');
  });

  it('emits typed events for a process that starts, sends and completes', async () => {
    const { manager, seen, sender } = setup(registrationProcess);
    await manager.handle(orderEvents('o-1').placed('e-1', T0 - 1));
    assert.deepEqual(sender.types(), ['RejectOrder'], 'already expired: rejected and completed at once');
    const commandId = sender.sent[0]?.id;
    assert.deepEqual(
      seen.map(({ at: _at, ...rest }) => rest),
      [
        {
          component: 'process-manager',
          name: 'registration',
          type: 'started',
          processId: 'o-1',
          eventId: 'e-1',
        },
        {
          component: 'process-manager',
          name: 'registration',
          type: 'handled',
          processId: 'o-1',
          eventId: 'e-1',
          eventType: 'OrderPlaced',
          version: 1,
          commands: 1,
          timeouts: 0,
        },
        { component: 'process-manager', name: 'registration', type: 'completed', processId: 'o-1' },
        {
          component: 'process-manager',
          name: 'registration',
          type: 'dispatched',
          processId: 'o-1',
          ids: [commandId],
        },
      ],
    );
  });

  it('gives up with WrongExpectedVersionError after maxAttempts conflicts', async () => {
    const inner = new EventStore({ backend: new MemoryEventStoreBackend() });
    const store = new Proxy(inner, {
      get(target, property) {
        if (property === 'appendToStream')
          return async (stream: string) => {
            throw new WrongExpectedVersionError(stream, 0, 1);
          };
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { manager, seen } = setup(reminder, { store, maxAttempts: 3 });
    await assert.rejects(
      manager.handle({ id: 'e-1', type: 'Started', data: { id: 'a' } }),
      WrongExpectedVersionError,
    );
    assert.deepEqual(
      seen.filter((e) => e.type === 'conflict').map((e) => (e.type === 'conflict' ? e.attempt : 0)),
      [1, 2],
    );
  });
});

describe('ProcessManager with a cache', () => {
  const memoryEventStore = () =>
    new EventStore({ backend: new MemoryEventStoreBackend(), clock: new VirtualClock({ now: T0 }) });
  const expiresAt = T0 + 15 * 60_000;

  it('reads the stream for a timeout it does not know: another instance may have scheduled it', async () => {
    const shared = memoryEventStore();
    const a = setup(reminder, { store: shared, cache: {} });
    const b = setup(reminder, { store: shared, cache: {} });
    await a.manager.handle({ id: 'e-1', type: 'Started', data: { id: 'r' } });
    await b.manager.handle({ id: 'e-2', type: 'Snoozed', data: { id: 'r' } });
    const snoozed = b.scheduler.scheduled[0];
    assert.ok(snoozed);
    // A's cached instance only knows the first reminder: on it, this one would be dropped as stale.
    assert.equal((await a.manager.deliverTimeout(snoozed)).outcome, 'handled');
    assert.equal((await a.manager.read('r')).state.reminded, 1);
    const first = a.scheduler.scheduled[0];
    assert.ok(first);
    assert.equal((await a.manager.deliverTimeout(first)).outcome, 'ignored', 'superseded by the snooze');
    assert.equal((await a.manager.deliverTimeout(snoozed)).outcome, 'duplicate');
  });

  it('decides again on a fresh read when the definition refuses the event in the cached state', async () => {
    const shared = memoryEventStore();
    const readsOf = countStreamReads(shared);
    const a = setup(registrationProcess, { store: shared, cache: {} });
    const b = setup(registrationProcess, { store: shared, cache: {} });
    const order = orderEvents('o-1');
    await a.manager.handle(order.placed('e-1', expiresAt));
    await b.manager.handle(order.reserved('e-2', a.sender.sent[0]?.id));
    await b.manager.handle(order.paid('e-3'));
    // A's cached instance still awaits the reservation, where OrderConfirmed throws.
    const confirmed = await a.manager.handle(order.confirmed('e-4'));
    assert.equal(confirmed.outcome === 'handled' && confirmed.state.stage, 'confirmed');
    assert.equal(readsOf('registration-o-1'), 2, 'A after the refusal (not to start), B once');
    assert.deepEqual(
      a.seen.filter((e) => e.type === 'conflict'),
      [],
    );
    assert.deepEqual(a.sender.types(), [
      'MakeSeatReservation',
      'CommitSeatReservation',
      'CreateSeatAssignments',
    ]);
  });

  it('after a failed send, handles the next event as a manager without a cache does', async () => {
    async function run(cache: ProcessCacheOptions | undefined) {
      const { manager, sender, seen, store } = setup(
        registrationProcess,
        cache === undefined ? {} : { cache },
      );
      const order = orderEvents('o-1');
      await manager.handle(order.placed('e-1', expiresAt));
      // MarkSeatsAsReserved goes out, MakePayment fails once.
      const send = sender.send.bind(sender);
      let failed = false;
      sender.send = async (command) => {
        if (command.type === 'MakePayment' && !failed) {
          failed = true;
          throw new Error('broker unavailable');
        }
        return send(command);
      };
      await assert.rejects(manager.handle(order.reserved('e-2', sender.sent[0]?.id)), ProcessDispatchError);
      // What is still to send goes out first, then the payment is decided on the stored state.
      await manager.handle(order.paid('e-3'));
      return {
        conflicts: seen.filter((e) => e.type === 'conflict').length,
        sent: sender.types(),
        records: (await store.readStream('registration-o-1')).map((r) => [r.type, r.data]),
      };
    }
    const cached = await run({});
    assert.deepEqual(cached, await run(undefined));
    assert.deepEqual(cached.sent.slice(-2), ['MakePayment', 'ConfirmOrder']);
  });

  it('keeps at most maxEntries instances, dropping the one written longest ago', async () => {
    const { manager, store, sender } = setup(registrationProcess, { cache: { maxEntries: 1 } });
    const readsOf = countStreamReads(store);
    await manager.handle(orderEvents('o-1').placed('e-1', expiresAt));
    await manager.handle(orderEvents('o-2').placed('e-2', expiresAt));
    await manager.handle(orderEvents('o-2').reserved('e-3', sender.sent[1]?.id));
    await manager.handle(orderEvents('o-1').reserved('e-4', sender.sent[0]?.id));
    assert.equal(readsOf('registration-o-2'), 0, 'started without a read, still cached');
    assert.equal(readsOf('registration-o-1'), 1, 'dropped for o-2');
    assert.equal((await manager.read('o-1')).state.stage, 'reservation-confirmed');
  });

  it('tries a deferred mark the store refused again after the delay, and says it failed', async () => {
    const { clock, store, manager, seen } = setup(registrationProcess, { cache: { deferSentMarksMs: 1000 } });
    const appendToStream = store.appendToStream.bind(store);
    let refusals = 1;
    store.appendToStream = ((streamName, events, options) => {
      if (refusals > 0 && events[0]?.type === DISPATCHED_RECORD) {
        refusals--;
        return Promise.reject(new Error('store down'));
      }
      return appendToStream(streamName, events, options);
    }) as typeof store.appendToStream;
    const records = async () => (await store.readStream('registration-o-1')).map((r) => r.type);
    await manager.handle(orderEvents('o-1').placed('e-1', T0 + 15 * 60_000));
    await clock.advance(1000);
    const failed = seen.filter((e) => e.type === 'mark-failed');
    assert.deepEqual(
      failed.map((e) => e.processId),
      ['o-1'],
    );
    assert.deepEqual(await records(), [STEP_RECORD]);
    await clock.advance(1000);
    assert.deepEqual(await records(), [STEP_RECORD, DISPATCHED_RECORD]);
    assert.deepEqual((await manager.read('o-1')).pending, []);
  });
});
