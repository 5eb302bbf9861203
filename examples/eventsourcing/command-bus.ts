// Command and query buses (CQRS): a command has exactly one handler. Sent where its handler is registered, it runs
// in process and its error reaches the sender; elsewhere it goes to a queue, and a worker consuming that queue
// runs it with the same handler code. Queries go to their own handlers and change nothing.
// Prints:
//   RenameConference: handled
//   RenameConference failed: a name is required
//   PlaceOrder: queued, then handled by the worker
//   order o-1: 2 seats
import {
  CommandBus,
  type CommandEnvelope,
  EventStore,
  MemoryEventStoreBackend,
  QueryBus,
} from '@stratus/eventsourcing';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('commands');

// The same handler code, registered where the command should run.
const placeOrder = async (command: CommandEnvelope<{ seats: number }>) => {
  await store.appendToStream(`order-${command.id}`, [
    { type: 'OrderPlaced', data: command.data, id: command.id },
  ]);
};
const renameConference = (command: CommandEnvelope<{ name: string }>) => {
  if (command.data.name === '') throw new Error('a name is required');
};

// The web process: renames run here; orders go to the 'commands' queue (queueOf chooses the queue per type).
const web = new CommandBus({ messaging, queueOf: () => 'commands' }).register(
  'RenameConference',
  renameConference,
);
console.log(`RenameConference: ${await web.send('RenameConference', { name: 'DevConf' })}`);
try {
  await web.send('RenameConference', { name: '' });
} catch (error) {
  console.log(`RenameConference failed: ${(error as Error).message}`);
}

// A worker process: consumes the queue; a failing command is retried, then dead-lettered.
const worker = new CommandBus({ messaging }).register('PlaceOrder', placeOrder);
const consumer = worker.consume('commands');
const placed = messaging.events.once((event) => event.type === 'message-completed');
const sent = await web.send('PlaceOrder', { seats: 2 }, { id: 'o-1' });
await placed;
console.log(`PlaceOrder: ${sent}, then handled by the worker`);

const queries = new QueryBus().register('order', async (query: { id: string }) => {
  const [event] = await store.readStream(`order-${query.id}`);
  return event?.data as { seats: number } | undefined;
});
const order = await queries.ask<{ seats: number }>('order', { id: 'o-1' });
console.log(`order o-1: ${order.seats} seats`);
await consumer.close();
await messaging.close();
await store.close();
