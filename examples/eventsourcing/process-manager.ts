// Process manager: a long-running business process (a saga orchestrated from events) reacts to events, keeps its
// state, and sends commands and timeouts. Each step's new state and the messages to send are stored in one append
// to the process's own stream and sent after that commit; messages still unsent are sent when the process next
// loads, so a crash between commit and send loses nothing, and deterministic ids make a resend a duplicate.
// Prints:
//   ReserveSeats for o-1
//   RequestPayment for o-1
//   ConfirmOrder for o-1
//   checkout o-1: done, completed true, 3 events handled, 0 unsent
//   OrderPlaced again: duplicate
import {
  CommandBus,
  type CommandEnvelope,
  EventStore,
  MemoryEventStoreBackend,
  type ProcessDefinition,
  type ProcessEvent,
  ProcessManager,
  ProcessRouter,
  queueTimeoutScheduler,
  type RecordedEvent,
} from '@stratus/eventsourcing';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

type Status = 'reserving' | 'paying' | 'done';
type Data = { orderId: string; seats?: number };

const checkout: ProcessDefinition<{ status: Status }, ProcessEvent<string, Data>> = {
  name: 'checkout', // instances are streams checkout-<orderId>
  startedBy: ['OrderPlaced'],
  correlate: (event) => event.data.orderId,
  initialState: () => ({ status: 'reserving' }),
  handle: (_state, event) => {
    const { orderId } = event.data;
    switch (event.type) {
      case 'OrderPlaced':
        return {
          send: [{ type: 'ReserveSeats', data: { orderId, seats: event.data.seats } }],
          // Comes back as an event unless cancelled, or the process completed, by then.
          schedule: [{ event: { type: 'ReservationExpired', data: { orderId } }, afterMs: 15 * 60_000 }],
        };
      case 'SeatsReserved':
        return { state: { status: 'paying' }, send: [{ type: 'RequestPayment', data: { orderId } }] };
      case 'PaymentReceived':
        return {
          state: { status: 'done' },
          send: [{ type: 'ConfirmOrder', data: { orderId } }],
          cancelTimeouts: ['ReservationExpired'],
          complete: true,
        };
      case 'ReservationExpired': // never after PaymentReceived: a completed process drops its timeouts
        return { send: [{ type: 'CancelOrder', data: { orderId } }], complete: true };
      default:
        return undefined;
    }
  },
};

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('checkout-timeouts');

// The other services, as local command handlers that record what they did as events.
const commands = new CommandBus();
const service = (reply: string) => async (command: CommandEnvelope<Data>) => {
  console.log(`${command.type} for ${command.data.orderId}`);
  const { orderId } = command.data;
  await store.appendToStream(`${reply}-${orderId}`, [{ type: reply, data: { orderId }, id: command.id }]);
};
commands.register('ReserveSeats', service('SeatsReserved'));
commands.register('RequestPayment', service('PaymentReceived'));
commands.register('ConfirmOrder', service('OrderConfirmed'));
commands.register('CancelOrder', service('OrderCancelled'));

const manager = new ProcessManager({
  definition: checkout,
  store,
  commands,
  timeouts: queueTimeoutScheduler(messaging, 'checkout-timeouts'),
});
const router = new ProcessRouter([manager]);
const subscription = router.subscribe(store, { name: 'checkout-router' }); // every event of the store, in order
const timeouts = router.consumeTimeouts(messaging, 'checkout-timeouts');

// Each step's commands are sent, then marked sent: the third step's mark ends this example's process.
let steps = 0;
const lastStepSent = manager.events.once((event) => event.type === 'dispatched' && ++steps === 3);

await store.appendToStream('order-o-1', [{ type: 'OrderPlaced', data: { orderId: 'o-1', seats: 2 } }]);
await lastStepSent;
const instance = await manager.read('o-1');
const handled = instance.handledEventIds.size;
console.log(
  `checkout o-1: ${instance.state.status}, completed ${instance.completed}, ${handled} events handled, ${instance.pending.length} unsent`,
);

const [placed] = await store.readStream<RecordedEvent<string, Data>>('order-o-1');
const again = await manager.handle(placed!);
console.log(`OrderPlaced again: ${again.outcome}`); // a redelivery changes nothing

await subscription.stop();
await timeouts.close();
await messaging.close();
await store.close();
