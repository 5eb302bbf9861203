/**
 * The process manager's core behaviour as one suite, run on every event store backend (memory, SQLite,
 * PostgreSQL): the happy path, duplicates and out-of-order events, the crash window between commit and send,
 * concurrent handlers of one process, and the cache of recent instances.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Clock } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { EventStore } from '../event-store.js';
import { ProcessDispatchError } from './errors.js';
import { countStreamReads, orderEvents, RecordingScheduler, RecordingSender } from './fixtures/helpers.js';
import {
  HAPPY_PATH_COMMANDS,
  RELEASE_BUFFER_MS,
  type RegistrationEvent,
  type RegistrationState,
  registrationProcess,
} from './fixtures/registration.js';
import type { ProcessCacheOptions, ProcessManagerEvent } from './process-manager.js';
import { ProcessManager } from './process-manager.js';
import { DISPATCHED_RECORD, STEP_RECORD, type StepRecord } from './process-stream.js';

export interface ContractStores {
  /** A store on a fresh, empty backend; call again for another handle on the SAME backend via `reopen`. */
  open(): Promise<{ store: EventStore; reopen: () => Promise<EventStore> }>;
  close(): Promise<void>;
}

/** A manager of the registration process sending to `sender`, timeouts to a RecordingScheduler. */
function registrationManager(
  store: EventStore,
  sender: RecordingSender,
  options: { readonly clock?: Clock; readonly cache?: ProcessCacheOptions } = {},
) {
  return new ProcessManager({
    definition: registrationProcess,
    store,
    commands: sender,
    timeouts: new RecordingScheduler(),
    ...options,
  });
}

/** Runs a registration's happy path through `manager`: placed, reserved, paid, confirmed (events e-1 to e-4). */
async function register(
  manager: ProcessManager<RegistrationState, RegistrationEvent>,
  sender: RecordingSender,
  order: ReturnType<typeof orderEvents>,
  expiresAt: number,
): Promise<void> {
  await manager.handle(order.placed('e-1', expiresAt));
  await manager.handle(order.reserved('e-2', sender.sent[0]?.id));
  await manager.handle(order.paid('e-3'));
  await manager.handle(order.confirmed('e-4'));
}

export function processManagerContract(label: string, stores: ContractStores): void {
  describe(`ProcessManager on ${label}`, () => {
    after(() => stores.close());

    async function setup() {
      const { store, reopen } = await stores.open();
      const sender = new RecordingSender();
      const scheduler = new RecordingScheduler();
      const seen: ProcessManagerEvent[] = [];
      const manager = new ProcessManager<RegistrationState, RegistrationEvent>({
        definition: registrationProcess,
        store,
        commands: sender,
        timeouts: scheduler,
      });
      manager.events.on((event) => seen.push(event));
      const now = store.clock.now();
      return { store, reopen, sender, scheduler, manager, seen, expiresAt: now + 15 * 60_000 };
    }

    it('runs a registration from OrderPlaced to OrderConfirmed, sending each command once, after its commit', async () => {
      const { store, sender, scheduler, manager, seen, expiresAt } = await setup();
      const order = orderEvents('o-1');
      const started = await manager.handle(order.placed('e-1', expiresAt));
      assert.equal(started.outcome, 'started');
      assert.deepEqual(sender.types(), ['MakeSeatReservation']);
      const reservation = sender.sent[0];
      const state = (await manager.read('o-1')).state;
      assert.equal(state.stage, 'awaiting-reservation');
      assert.equal(state.reservationCommandId, reservation?.id, 'the state remembers the command it awaits');
      assert.deepEqual(
        scheduler.scheduled.map((t) => [t.processName, t.processId, t.type, t.dueAt]),
        [['registration', 'o-1', 'RegistrationExpired', expiresAt + RELEASE_BUFFER_MS]],
      );

      await manager.handle(order.reserved('e-2', reservation?.id));
      await manager.handle(order.paid('e-3'));
      const done = await manager.handle(order.confirmed('e-4'));
      assert.equal(done.outcome, 'handled');
      assert.equal(done.outcome === 'handled' && done.completed, true);
      assert.deepEqual(sender.types(), HAPPY_PATH_COMMANDS);
      assert.equal(new Set(sender.sent.map((c) => c.id)).size, 6, 'every command has its own id');

      const instance = await manager.read('o-1');
      assert.equal(instance.completed, true);
      assert.equal(instance.state.stage, 'confirmed');
      assert.deepEqual(instance.pending, []);
      assert.equal(instance.liveTimeouts.size, 0, 'completion drops the expiry timeout');
      // One step per event, each followed by the mark of what it sent.
      const records = await store.readStream('registration-o-1');
      assert.deepEqual(
        records.map((r) => r.type),
        [STEP_RECORD, DISPATCHED_RECORD, STEP_RECORD, DISPATCHED_RECORD, STEP_RECORD].concat([
          DISPATCHED_RECORD,
          STEP_RECORD,
          DISPATCHED_RECORD,
        ]),
      );
      assert.deepEqual(
        seen.map((e) => e.type).filter((t) => t !== 'dispatched' && t !== 'handled'),
        ['started', 'completed'],
      );
    });

    it('ignores a redelivered event, a repeated OrderPlaced once complete, and a repeated OrderConfirmed', async () => {
      const { store, sender, manager, seen, expiresAt } = await setup();
      const order = orderEvents('o-2');
      await manager.handle(order.placed('e-1', expiresAt));
      const again = await manager.handle(order.placed('e-1', expiresAt));
      assert.deepEqual(again, { outcome: 'duplicate', processId: 'o-2', reason: 'duplicate' });
      assert.deepEqual(sender.types(), ['MakeSeatReservation'], 'a redelivery sends nothing');
      const reservationId = (await manager.read('o-2')).state.reservationCommandId;
      await manager.handle(order.reserved('e-2', reservationId));
      await manager.handle(order.paid('e-3'));
      await manager.handle(order.confirmed('e-4'));
      const version = await store.streamVersion('registration-o-2');

      // The Journey's quirks, fixed: neither restarts the process nor repeats its commands.
      const replaced = await manager.handle(order.placed('e-5', expiresAt));
      const reconfirmed = await manager.handle(order.confirmed('e-6'));
      assert.deepEqual(replaced, { outcome: 'ignored', processId: 'o-2', reason: 'completed' });
      assert.deepEqual(reconfirmed, { outcome: 'ignored', processId: 'o-2', reason: 'completed' });
      assert.equal(sender.ofType('MakeSeatReservation').length, 1);
      assert.equal(sender.ofType('CreateSeatAssignments').length, 1);
      assert.equal(await store.streamVersion('registration-o-2'), version, 'nothing recorded');
      assert.ok(seen.some((e) => e.type === 'duplicate-ignored' && e.eventId === 'e-1'));
      assert.equal(seen.filter((e) => e.type === 'ignored').length, 2);
    });

    it('handles out-of-order events as the definition says: stale replies dropped, an early payment kept', async () => {
      const { store, sender, manager, expiresAt } = await setup();
      const order = orderEvents('o-3');
      // A reply for a process that never started creates nothing.
      const orphan = await manager.handle(order.reserved('e-0', undefined));
      assert.deepEqual(orphan, { outcome: 'ignored', processId: 'o-3', reason: 'not-started' });
      assert.equal(await store.streamVersion('registration-o-3'), 0);

      await manager.handle(order.placed('e-1', expiresAt));
      const first = sender.ofType('MakeSeatReservation')[0]?.id;
      await manager.handle(order.updated('e-2', 3));
      const second = sender.ofType('MakeSeatReservation')[1]?.id;
      assert.ok(first !== undefined && second !== undefined && first !== second);
      // The reply to the replaced reservation arrives late: dropped, still awaiting the current one.
      const stale = await manager.handle(order.reserved('e-3', first, 2));
      assert.equal(stale.outcome, 'handled');
      assert.equal((await manager.read('o-3')).state.stage, 'awaiting-reservation');
      assert.deepEqual(sender.ofType('MarkSeatsAsReserved'), []);
      // The payment overtakes the current reply: remembered, and acted on when the reply comes.
      await manager.handle(order.paid('e-4'));
      assert.deepEqual(sender.ofType('ConfirmOrder'), []);
      await manager.handle(order.reserved('e-5', second, 3));
      assert.equal((await manager.read('o-3')).state.stage, 'payment-received');
      assert.deepEqual(sender.types().slice(-2), ['MarkSeatsAsReserved', 'ConfirmOrder']);
      assert.deepEqual(sender.ofType('MakePayment'), [], 'no second payment for an order already paid');
    });

    it('sends what a failed send left pending when the process next loads, on a new manager instance', async () => {
      const { reopen, sender, manager, seen, expiresAt } = await setup();
      const order = orderEvents('o-4');
      sender.failNext = 1;
      await assert.rejects(manager.handle(order.placed('e-1', expiresAt)), (error: unknown) => {
        assert.ok(error instanceof ProcessDispatchError);
        assert.equal(error.processId, 'o-4');
        assert.equal(error.pending, 2, 'the command and the timeout are still to go');
        return true;
      });
      assert.deepEqual(sender.sent, []);
      assert.ok(seen.some((e) => e.type === 'dispatch-failed'));

      // Another instance (a restarted worker) on the same store.
      const restarted = new RecordingSender();
      const scheduler = new RecordingScheduler();
      const manager2 = new ProcessManager({
        definition: registrationProcess,
        store: await reopen(),
        commands: restarted,
        timeouts: scheduler,
      });
      const stored = await manager2.read('o-4');
      assert.equal(stored.state.stage, 'awaiting-reservation', 'the decision was committed');
      assert.equal(stored.pending.length, 2);
      await manager2.load('o-4');
      assert.deepEqual(restarted.types(), ['MakeSeatReservation']);
      assert.equal(restarted.sent[0]?.id, stored.state.reservationCommandId, 'the same id as recorded');
      assert.equal(scheduler.scheduled.length, 1);
      assert.deepEqual((await manager2.read('o-4')).pending, []);
      // Loading again, or the source redelivering the event, sends nothing more.
      await manager2.load('o-4');
      assert.deepEqual(await manager2.handle(order.placed('e-1', expiresAt)), {
        outcome: 'duplicate',
        processId: 'o-4',
        reason: 'duplicate',
      });
      assert.equal(restarted.sent.length, 1);
    });

    it('marks what was sent before a failure, and sends only the rest later', async () => {
      const { sender, manager, expiresAt } = await setup();
      const order = orderEvents('o-5');
      await manager.handle(order.placed('e-1', expiresAt));
      const reservationId = (await manager.read('o-5')).state.reservationCommandId;
      // MarkSeatsAsReserved goes out, MakePayment fails.
      const original = sender.send.bind(sender);
      let calls = 0;
      sender.send = async (command) => {
        if (++calls === 2) throw new Error('broker unavailable');
        return original(command);
      };
      await assert.rejects(manager.handle(order.reserved('e-2', reservationId)), ProcessDispatchError);
      assert.deepEqual(sender.types(), ['MakeSeatReservation', 'MarkSeatsAsReserved']);
      const pending = (await manager.read('o-5')).pending;
      assert.deepEqual(
        pending.map((p) => (p.kind === 'command' ? p.command.type : p.timeout.type)),
        ['MakePayment'],
      );
      // The next event first flushes the rest, then is handled.
      await manager.handle(order.paid('e-3'));
      assert.deepEqual(sender.types(), [
        'MakeSeatReservation',
        'MarkSeatsAsReserved',
        'MakePayment',
        'ConfirmOrder',
      ]);
      assert.equal(await manager.flushAll(), 0);
    });

    it('retries when another instance handles an event of the same process first', async () => {
      const { store, reopen, sender, manager, expiresAt } = await setup();
      const order = orderEvents('o-6');
      await manager.handle(order.placed('e-1', expiresAt));
      const reservationId = (await manager.read('o-6')).state.reservationCommandId;
      // Instance A decides on PaymentCompleted, but its append waits until instance B has handled SeatsReserved.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let reachedAppend!: () => void;
      const appending = new Promise<void>((resolve) => {
        reachedAppend = resolve;
      });
      let gatedOnce = false;
      const gatedAppend: EventStore['appendToStream'] = async (...args) => {
        if (!gatedOnce) {
          gatedOnce = true;
          reachedAppend();
          await gate;
        }
        return store.appendToStream(...args);
      };
      const gated = new Proxy(store, {
        get(target, property) {
          if (property === 'appendToStream') return gatedAppend;
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const managerA = new ProcessManager({
        definition: registrationProcess,
        store: gated,
        commands: sender,
      });
      const conflicts: number[] = [];
      managerA.events.on((e) => e.type === 'conflict' && conflicts.push(e.attempt));
      const handledByA = managerA.handle(order.paid('e-3'));
      await appending;
      const managerB = new ProcessManager({
        definition: registrationProcess,
        store: await reopen(),
        commands: sender,
      });
      await managerB.handle(order.reserved('e-2', reservationId));
      release();
      const result = await handledByA;
      assert.deepEqual(conflicts, [1]);
      assert.equal(result.outcome, 'handled');
      // A decided again on B's state: reservation confirmed, so the payment confirms the order.
      const final = await manager.read('o-6');
      assert.equal(final.state.stage, 'payment-received');
      assert.deepEqual(sender.types(), [
        'MakeSeatReservation',
        'MarkSeatsAsReserved',
        'MakePayment',
        'ConfirmOrder',
      ]);
      assert.ok(final.handledEventIds.has('e-2') && final.handledEventIds.has('e-3'));
    });

    it('with a cache, reads a process stream once for all its events, and ends as without one', async () => {
      const order = orderEvents('o-7');
      const stream = 'registration-o-7';
      async function run(cache: ProcessCacheOptions | undefined) {
        const { store } = await stores.open();
        const readsOf = countStreamReads(store);
        const sender = new RecordingSender();
        const manager = registrationManager(store, sender, cache === undefined ? {} : { cache });
        await register(manager, sender, order, Date.UTC(2100, 0, 1));
        const reads = readsOf(stream);
        const records = (await store.readStream(stream)).map((r) => [r.streamVersion, r.type, r.data]);
        return { reads, records, instance: await manager.read('o-7'), sent: sender.sent };
      }
      const cached = await run({});
      const uncached = await run(undefined);
      // The event that starts the process takes its stream to be new, with or without a cache.
      assert.equal(cached.reads, 0);
      assert.equal(uncached.reads, 3);
      assert.equal(cached.instance.state.stage, 'confirmed');
      assert.deepEqual(cached.instance, uncached.instance);
      assert.deepEqual(cached.records, uncached.records);
      assert.deepEqual(cached.sent, uncached.sent);
    });

    it('with deferred sent marks, each step carries the mark of what was sent before it, and the last is appended after the delay', async () => {
      const { store, reopen } = await stores.open();
      const clock = new VirtualClock({ now: store.clock.now() });
      const sender = new RecordingSender();
      const manager = registrationManager(store, sender, { clock, cache: { deferSentMarksMs: 1000 } });
      const stream = 'registration-o-9';
      const records = async () => (await store.readStream(stream)).map((r) => r.type);
      await register(manager, sender, orderEvents('o-9'), clock.now() + 15 * 60_000);
      assert.deepEqual(sender.types(), HAPPY_PATH_COMMANDS);
      assert.deepEqual(await records(), [STEP_RECORD, STEP_RECORD, STEP_RECORD, STEP_RECORD]);
      const steps = (await store.readStream(stream)).map((r) => r.data as StepRecord);
      // Each step marks what the one before it recorded and this manager sent (the first step's timeout too).
      for (const [i, step] of steps.entries()) {
        const before = steps[i - 1];
        const expected =
          before === undefined ? undefined : [...before.commands, ...before.timeouts].map((m) => m.id);
        assert.deepEqual(step.sent, expected, `step ${i + 1}`);
      }
      // Another instance reading the stream now would send the last step's commands again (same ids)...
      const fresh = new ProcessManager({
        definition: registrationProcess,
        store: await reopen(),
        commands: new RecordingSender(),
      });
      assert.deepEqual(
        (await fresh.read('o-9')).pending.map((m) => (m.kind === 'command' ? m.command.id : m.timeout.id)),
        steps[3]?.commands.map((c) => c.id),
      );
      // ... until the deferred mark is appended on its own, once the delay has passed.
      await clock.advance(999);
      assert.deepEqual(await records(), [STEP_RECORD, STEP_RECORD, STEP_RECORD, STEP_RECORD]);
      await clock.advance(1);
      await waitUntil(async () => (await records()).length === 5, 'the deferred mark is appended');
      assert.deepEqual(await records(), [
        STEP_RECORD,
        STEP_RECORD,
        STEP_RECORD,
        STEP_RECORD,
        DISPATCHED_RECORD,
      ]);
      assert.deepEqual((await fresh.read('o-9')).pending, []);
      assert.equal(sender.sent.length, HAPPY_PATH_COMMANDS.length, 'nothing sent twice');
    });

    it('with deferred sent marks, recordSent appends every mark still deferred', async () => {
      const { store } = await stores.open();
      const manager = registrationManager(store, new RecordingSender(), {
        clock: new VirtualClock({ now: store.clock.now() }),
        cache: { deferSentMarksMs: 60_000 },
      });
      for (const id of ['o-10', 'o-11'])
        await manager.handle(orderEvents(id).placed(`${id}-e1`, store.clock.now() + 15 * 60_000));
      await manager.recordSent();
      for (const id of ['o-10', 'o-11']) {
        assert.deepEqual(
          (await store.readStream(`registration-${id}`)).map((r) => r.type),
          [STEP_RECORD, DISPATCHED_RECORD],
        );
        assert.deepEqual((await manager.read(id)).pending, []);
      }
    });

    it('with a cache on two instances, the one behind the stream conflicts, reads it and decides again', async () => {
      const { store, reopen } = await stores.open();
      const sender = new RecordingSender();
      const scheduler = new RecordingScheduler();
      function cachedInstance(store: EventStore) {
        const manager = new ProcessManager({
          definition: registrationProcess,
          store,
          commands: sender,
          timeouts: scheduler,
          cache: {},
        });
        const conflicts: number[] = [];
        manager.events.on((e) => e.type === 'conflict' && conflicts.push(e.attempt));
        return { manager, conflicts, readsOf: countStreamReads(store) };
      }
      const a = cachedInstance(store);
      const b = cachedInstance(await reopen());
      const order = orderEvents('o-8');
      const stream = 'registration-o-8';
      await a.manager.handle(order.placed('e-1', store.clock.now() + 15 * 60_000));
      await b.manager.handle(order.reserved('e-2', sender.sent[0]?.id));
      // A's cached instance still awaits the reservation: A's step at that version conflicts.
      await a.manager.handle(order.paid('e-3'));
      // B's cached instance has not seen the payment.
      const confirmed = await b.manager.handle(order.confirmed('e-4'));
      assert.equal(confirmed.outcome === 'handled' && confirmed.completed, true);
      assert.deepEqual([a.conflicts, b.conflicts], [[1], [1]]);
      // A started the process without reading; each read after its conflict, B also before its first event.
      assert.deepEqual([a.readsOf(stream), b.readsOf(stream)], [1, 2]);
      // Redelivered to A, whose cached instance has not seen it: A's step for it is already stored (by B, with
      // the same deterministic id), so the append writes nothing and A reads.
      assert.deepEqual(await a.manager.handle(order.confirmed('e-4')), {
        outcome: 'duplicate',
        processId: 'o-8',
        reason: 'duplicate',
      });
      assert.equal(a.readsOf(stream), 2);

      const steps = (await store.readStream(stream)).filter((r) => r.type === STEP_RECORD);
      assert.deepEqual(
        steps.map((r) => (r.data as StepRecord).eventId),
        ['e-1', 'e-2', 'e-3', 'e-4'],
      );
      const final = await a.manager.read('o-8');
      assert.equal(final.state.stage, 'confirmed');
      assert.equal(final.state.paid, true);
      assert.equal(final.completed, true);
      assert.deepEqual(final.pending, []);
      assert.deepEqual(sender.types(), HAPPY_PATH_COMMANDS);
    });
  });
}
