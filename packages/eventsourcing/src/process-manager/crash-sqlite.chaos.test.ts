/**
 * A real crash in the window between the commit of a decision and the sending of its commands: a child process
 * running the manager on SQLite is SIGKILLed there, and a new instance sends what was recorded, once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Messaging, SqliteMessageBackend } from '@stratus/messaging';
import { runChild } from '@stratus/testkit';
import { CommandBus } from '../command-bus.js';
import { EventStore } from '../event-store.js';
import { SqliteEventStoreBackend } from '../sqlite/sqlite-event-store.js';
import {
  type RegistrationEvent,
  type RegistrationState,
  registrationProcess,
} from './fixtures/registration.js';
import { ProcessManager } from './process-manager.js';
import { queueTimeoutScheduler } from './senders.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-pm-crash-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let runs = 0;

/** Runs the child until it is inside the window, kills it there, and opens the survivors' view. */
async function crashIn(mode: 'before-send' | 'after-send') {
  const run = ++runs;
  const storePath = join(directory, `store-${run}.db`);
  const queuePath = join(directory, `queue-${run}.db`);
  const setup = new SqliteMessageBackend({ path: queuePath });
  const setupMessaging = new Messaging({ backend: setup });
  await setupMessaging.createQueue('commands');
  await setupMessaging.createQueue('timeouts');
  await setup.close();

  const child = runChild(new URL('./fixtures/crash-child.ts', import.meta.url), {
    env: { STORE_PATH: storePath, QUEUE_PATH: queuePath, MODE: mode },
  });
  const inWindow = await child.nextMessage<{ commandId: string }>(
    (message) => (message as { type?: string }).type === 'in-window',
    20_000,
  );
  child.kill('SIGKILL');
  assert.equal((await child.exited).signal, 'SIGKILL');

  const store = new EventStore({ backend: new SqliteEventStoreBackend({ path: storePath }) });
  const messaging = new Messaging({ backend: new SqliteMessageBackend({ path: queuePath }) });
  const manager = new ProcessManager<RegistrationState, RegistrationEvent>({
    definition: registrationProcess,
    store,
    commands: new CommandBus({ messaging }),
    timeouts: queueTimeoutScheduler(messaging, 'timeouts'),
  });
  const close = async () => {
    await store.close();
    await messaging.backend.close();
  };
  return { commandId: inWindow.commandId, store, messaging, manager, close };
}

describe('process manager crash window on SQLite (SIGKILLed child)', () => {
  it('sends the commands of a decision committed just before the crash, when a new instance loads it', async () => {
    const { commandId, messaging, manager, close } = await crashIn('before-send');
    try {
      const stored = await manager.read('o-1');
      assert.equal(stored.state.stage, 'awaiting-reservation', 'the decision survived the crash');
      assert.equal(stored.state.reservationCommandId, commandId);
      assert.deepEqual(
        stored.pending.map((p) => p.kind),
        ['command', 'timeout'],
      );
      assert.deepEqual(await messaging.queue('commands').peek(), [], 'nothing was sent before the crash');

      assert.equal(await manager.flushAll(), 1);
      const queued = await messaging.queue('commands').peek();
      assert.deepEqual(
        queued.map((m) => [m.id, m.subject]),
        [[commandId, 'MakeSeatReservation']],
      );
      assert.equal((await messaging.queue('timeouts').peek()).length, 1);
      assert.deepEqual((await manager.read('o-1')).pending, []);
      assert.equal(await manager.flushAll(), 0);
    } finally {
      await close();
    }
  });

  it('sends again a command that left before the crash but was not marked: the queue drops the duplicate', async () => {
    const { commandId, messaging, manager, close } = await crashIn('after-send');
    try {
      assert.equal((await messaging.queue('commands').peek()).length, 1, 'it left before the crash');
      assert.equal((await manager.read('o-1')).pending.length, 2, 'but was not marked sent');
      const dispatched: string[] = [];
      manager.events.on((event) => event.type === 'dispatched' && dispatched.push(...event.ids));
      await manager.load('o-1');
      assert.ok(dispatched.includes(commandId), 'the command was sent again');
      const queued = await messaging.queue('commands').peek();
      assert.deepEqual(
        queued.map((m) => m.id),
        [commandId],
        'one message: the resend had the same id',
      );
      assert.deepEqual((await manager.read('o-1')).pending, []);
    } finally {
      await close();
    }
  });
});
