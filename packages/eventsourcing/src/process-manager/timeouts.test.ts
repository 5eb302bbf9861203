/**
 * Timeouts as scheduled messages: recorded with the decision, sent after commit to a queue with deliver-at on the
 * injectable clock, consumed and brought back to the process as events; one for a process that moved on is dropped.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  MemoryMessageBackend,
  type MessageBackend,
  Messaging,
  SqliteMessageBackend,
} from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import { orderEvents, RecordingSender } from './fixtures/helpers.js';
import {
  RELEASE_BUFFER_MS,
  type RegistrationEvent,
  type RegistrationState,
  registrationProcess,
} from './fixtures/registration.js';
import { ProcessManager, type ProcessManagerEvent } from './process-manager.js';
import { ProcessRouter } from './router.js';
import { queueTimeoutScheduler } from './senders.js';

const T0 = Date.UTC(2026, 2, 1, 9, 0);
const directory = mkdtempSync(join(tmpdir(), 'stratus-pm-timeouts-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;

const queues: Record<string, () => MessageBackend> = {
  memory: () => new MemoryMessageBackend(),
  SQLite: () => new SqliteMessageBackend({ path: join(directory, `queue-${++files}.db`) }),
};

for (const [label, openQueueBackend] of Object.entries(queues)) {
  describe(`process timeouts on a ${label} queue`, () => {
    async function setup() {
      const clock = new VirtualClock({ now: T0 });
      const messaging = new Messaging({ backend: openQueueBackend(), clock });
      await messaging.createQueue('timeouts');
      const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
      const sender = new RecordingSender();
      const manager = new ProcessManager<RegistrationState, RegistrationEvent>({
        definition: registrationProcess,
        store,
        commands: sender,
        timeouts: queueTimeoutScheduler(messaging, 'timeouts'),
      });
      const seen: ProcessManagerEvent[] = [];
      manager.events.on((event) => seen.push(event));
      const consumer = new ProcessRouter([manager]).consumeTimeouts(messaging, 'timeouts', {
        idlePollMs: 60_000,
      });
      const close = async () => {
        await consumer.close();
        await messaging.backend.close();
      };
      return { clock, messaging, manager, sender, seen, close };
    }

    it('expires a registration when its timeout falls due, and not before', async () => {
      const { clock, messaging, manager, sender, close } = await setup();
      try {
        const expiresAt = T0 + 15 * 60_000;
        await manager.handle(orderEvents('o-1').placed('e-1', expiresAt));
        const [scheduled] = await messaging.queue('timeouts').peek();
        assert.equal(scheduled?.availableAt, expiresAt + RELEASE_BUFFER_MS, 'deliver-at on the clock');
        assert.equal(scheduled?.state, 'scheduled');
        assert.equal(scheduled?.subject, 'RegistrationExpired');

        await clock.advanceTo(expiresAt + RELEASE_BUFFER_MS - T0 - 1);
        const [waiting] = await messaging.queue('timeouts').peek();
        assert.equal(waiting?.state, 'scheduled', 'not due yet');
        assert.equal((await manager.read('o-1')).state.stage, 'awaiting-reservation');
        assert.deepEqual(sender.types(), ['MakeSeatReservation']);

        await clock.advance(1);
        await waitUntil(async () => (await manager.read('o-1')).completed, 'the timeout came back');
        const expired = await manager.read('o-1');
        assert.equal(expired.state.stage, 'expired');
        assert.deepEqual(sender.types(), ['MakeSeatReservation', 'RejectOrder', 'CancelSeatReservation']);
        await waitUntil(async () => (await messaging.queue('timeouts').stats()).length === 0, 'completed');
      } finally {
        await close();
      }
    });

    it('drops a timeout whose process completed before it fell due', async () => {
      const { clock, manager, sender, seen, close } = await setup();
      try {
        const order = orderEvents('o-2');
        await manager.handle(order.placed('e-1', T0 + 15 * 60_000));
        const reservationId = (await manager.read('o-2')).state.reservationCommandId;
        await manager.handle(order.reserved('e-2', reservationId));
        await manager.handle(order.paid('e-3'));
        await manager.handle(order.confirmed('e-4'));
        await clock.advance(60 * 60_000);
        await waitUntil(
          () => seen.some((e) => e.type === 'ignored' && e.reason === 'stale-timeout'),
          'the late timeout was delivered and dropped',
        );
        assert.equal((await manager.read('o-2')).state.stage, 'confirmed');
        assert.deepEqual(sender.ofType('RejectOrder'), []);
        assert.deepEqual(sender.ofType('CancelSeatReservation'), []);
      } finally {
        await close();
      }
    });
  });
}
