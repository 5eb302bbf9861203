import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff } from '@stratus/core';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import {
  CommandBus,
  type CommandEnvelope,
  NoCommandHandlerError,
  NoQueryHandlerError,
  QueryBus,
} from './command-bus.js';

async function messagingWithQueues(...queues: { name: string; sessions?: boolean }[]) {
  const messaging = new Messaging({ backend: new MemoryMessageBackend() });
  for (const queue of queues) await messaging.createQueue(queue.name, { sessions: queue.sessions ?? false });
  return messaging;
}

describe('CommandBus', () => {
  it('runs a local handler in process and passes its error to the sender', async () => {
    const handled: CommandEnvelope[] = [];
    const bus = new CommandBus().register<{ seats: number }>('PlaceOrder', (command) => {
      if (command.data.seats < 0) throw new Error('negative seats');
      handled.push(command);
    });
    assert.equal(await bus.send('PlaceOrder', { seats: 2 }, { id: 'c-1', correlationId: 'r-1' }), 'handled');
    assert.deepEqual(handled, [{ type: 'PlaceOrder', id: 'c-1', data: { seats: 2 }, correlationId: 'r-1' }]);
    await assert.rejects(bus.send('PlaceOrder', { seats: -1 }), /negative seats/);
    await assert.rejects(bus.send('Unknown', {}), NoCommandHandlerError);
  });

  it('queues commands it has no handler for; a worker runs them with the same handler code, once per id', async () => {
    const messaging = await messagingWithQueues({ name: 'commands' }, { name: 'seats', sessions: true });
    const web = new CommandBus({
      messaging,
      queueOf: (type) => (type === 'MakeSeatReservation' ? 'seats' : 'commands'),
      sessionOf: (command) =>
        command.type === 'MakeSeatReservation'
          ? `conference-${(command.data as { conference: string }).conference}`
          : undefined,
    });
    const ran: string[] = [];
    const handler = (command: CommandEnvelope) => void ran.push(`${command.type}:${command.id}`);
    const worker = new CommandBus({ messaging })
      .register('RegisterToConference', handler)
      .register('MakeSeatReservation', handler);
    assert.equal(await web.send('RegisterToConference', { order: 'o-1' }, { id: 'cmd-1' }), 'queued');
    assert.equal(await web.send('RegisterToConference', { order: 'o-1' }, { id: 'cmd-1' }), 'queued');
    await web.send('MakeSeatReservation', { conference: 'c-9' }, { id: 'cmd-2' });
    const [peeked] = await messaging.queue('seats').peek();
    assert.equal(peeked?.sessionId, 'conference-c-9');
    const consumers = [worker.consume('commands'), worker.consume('seats')];
    await waitUntil(() => ran.length >= 2, 'both commands ran');
    assert.deepEqual(ran.sort(), ['MakeSeatReservation:cmd-2', 'RegisterToConference:cmd-1']);
    for (const consumer of consumers) await consumer.close();
  });

  it('dead-letters a queued command nobody handles', async () => {
    const messaging = await messagingWithQueues({ name: 'commands' });
    await new CommandBus({ messaging }).send('Orphan', {});
    const consumer = new CommandBus({ messaging }).consume('commands');
    await waitUntil(
      async () => (await messaging.queue('commands').listDeadLetters()).length === 1,
      'dead-lettered',
    );
    const [dead] = await messaging.queue('commands').listDeadLetters();
    assert.equal(dead?.deadLetterReason, 'no-handler');
    await consumer.close();
  });

  it('drops a command past its expiry: unhandled locally, never queued, expired on the queue', async () => {
    const clock = new VirtualClock({ now: 1_000_000 });
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock });
    await messaging.createQueue('commands');
    const ran: string[] = [];
    const local = new CommandBus({ clock }).register('Reserve', (command) => void ran.push(command.id));
    assert.equal(await local.send('Reserve', {}, { id: 'late', expiresAt: 1_000_000 }), 'expired');
    assert.equal(await local.send('Reserve', {}, { id: 'on-time', expiresAt: 1_000_001 }), 'handled');
    assert.deepEqual(ran, ['on-time']);
    await assert.rejects(local.send('Reserve', {}, { expiresAt: Number.NaN }), /expiresAt/);

    const web = new CommandBus({ messaging, clock });
    assert.equal(await web.send('Reserve', {}, { id: 'stale', expiresAt: 1_000_000 }), 'expired');
    assert.equal(await web.send('Reserve', {}, { id: 'queued', expiresAt: 1_060_000 }), 'queued');
    assert.equal((await messaging.queue('commands').peek()).length, 1);
    await clock.advance(60_000);
    const worker = new CommandBus({ messaging, clock }).register(
      'Reserve',
      (command) => void ran.push(command.id),
    );
    const consumer = worker.consume('commands');
    await waitUntil(
      async () => (await messaging.queue('commands').listDeadLetters()).length === 1,
      'dead-lettered',
    );
    const [dead] = await messaging.queue('commands').listDeadLetters();
    assert.equal(dead?.deadLetterReason, 'expired');
    assert.deepEqual(ran, ['on-time']);
    await consumer.close();
  });

  it('hands a batch handler the commands of a session queued after each, up to one of another handler', async () => {
    const messaging = await messagingWithQueues({ name: 'seats', sessions: true });
    const batches: string[][] = [];
    const worker = new CommandBus({ messaging })
      .registerBatch(['Reserve', 'Cancel'], async (commands) => {
        batches.push(commands.map((command) => command.id));
        // Handles at most three at a time: the rest come in the next batch.
        return Math.min(commands.length, 3);
      })
      .register('Audit', () => {
        batches.push(['audit']);
      });
    const queue = messaging.queue<CommandEnvelope>('seats');
    const types = ['Reserve', 'Reserve', 'Cancel', 'Reserve', 'Reserve', 'Audit', 'Reserve'];
    await queue.sendBatch(
      types.map((type, i) => ({ body: { type, id: `c${i}`, data: {} }, sessionId: 'conference-1' })),
    );
    const consumer = worker.consume('seats', { sessionBatch: 10 });
    await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
    await consumer.close();
    assert.deepEqual(batches, [['c0', 'c1', 'c2', 'c3', 'c4'], ['c3', 'c4'], ['audit'], ['c6']]);
    assert.equal(consumer.processed, 7);
    // In process, a batch of one.
    const local = new CommandBus().registerBatch(['Reserve'], async (commands) => {
      batches.push(commands.map((command) => command.id));
      return 1;
    });
    await local.send('Reserve', {}, { id: 'l1' });
    assert.deepEqual(batches.at(-1), ['l1']);
  });

  it('retries a batch whose handler says it handled more than it was given', async () => {
    const messaging = await messagingWithQueues({ name: 'seats', sessions: true });
    let calls = 0;
    const events: string[] = [];
    messaging.events.on((event) => events.push(event.type));
    const worker = new CommandBus({ messaging }).registerBatch(['Reserve'], async (commands) => {
      calls++;
      return calls === 1 ? commands.length + 1 : commands.length;
    });
    await messaging
      .queue<CommandEnvelope>('seats')
      .send({ type: 'Reserve', id: 'c1', data: {} }, { sessionId: 's' });
    const consumer = worker.consume('seats', { sessionBatch: 4, retryBackoff: constantBackoff(0) });
    await waitUntil(async () => (await messaging.queue('seats').stats()).length === 0, 'handled on retry');
    await consumer.close();
    assert.equal(calls, 2);
    assert.ok(events.includes('message-failed'));
  });

  it('refuses bad registrations', () => {
    const bus = new CommandBus().register('A', () => {});
    assert.throws(() => bus.register('A', () => {}), /already registered/);
    assert.throws(() => bus.register('', () => {}), /type/);
    assert.throws(() => bus.register('B', 'x' as never), /handler/);
    assert.throws(() => new CommandBus({ messaging: {} as never }), /messaging/);
    assert.throws(() => bus.registerBatch([], async () => 1), /types/);
    assert.throws(() => bus.registerBatch(['A'], async () => 1), /already registered/);
  });
});

describe('QueryBus', () => {
  it('answers queries from their handler', async () => {
    const queries = new QueryBus().register<{ id: string }, string>(
      'OrderById',
      (query) => `order ${query.id}`,
    );
    assert.equal(await queries.ask('OrderById', { id: '7' }), 'order 7');
    await assert.rejects(queries.ask('Nope'), NoQueryHandlerError);
  });
});
