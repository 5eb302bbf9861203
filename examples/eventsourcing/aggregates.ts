// Aggregates as deciders: `decide` turns a command and the current state into events (or refuses it), `evolve`
// folds events into state. The repository loads the state from the aggregate's stream, decides, and appends at the
// loaded version; a concurrent writer makes it reload and decide again. Snapshots store the state every N events,
// so a load reads only the events after the newest one.
// Prints:
//   reserved 3, 2 left at version 2
//   refused: only 2 seats left
//   snapshot taken at version 4
//   loaded: 10 left at version 5
import { AggregateRepository, EventStore, MemoryEventStoreBackend } from '@stratus/eventsourcing';

type Event =
  | { type: 'SeatsAdded'; data: { seats: number } }
  | { type: 'SeatsReserved'; data: { seats: number; orderId: string } };
type Command = { type: 'add'; seats: number } | { type: 'reserve'; seats: number; orderId: string };
interface Availability {
  readonly left: number;
}

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
const conferences = new AggregateRepository<Availability, Event, Command>(store, {
  category: 'seats', // streams seats-<id>
  decider: {
    initialState: () => ({ left: 0 }),
    evolve: (state, event) => ({
      left: event.type === 'SeatsAdded' ? state.left + event.data.seats : state.left - event.data.seats,
    }),
    decide: (command, state) => {
      if (command.type === 'add') return { type: 'SeatsAdded', data: { seats: command.seats } };
      if (command.seats > state.left) throw new Error(`only ${state.left} seats left`);
      return { type: 'SeatsReserved', data: { seats: command.seats, orderId: command.orderId } };
    },
  },
  snapshots: { every: 4 }, // also repository.snapshot(id) on demand
});
conferences.events.on((event) => {
  if (event.type === 'snapshot-taken') console.log(`snapshot taken at version ${event.version}`);
});

await conferences.execute('devconf', { type: 'add', seats: 5 });
// eventIds make a retried command idempotent: the same ids are not appended twice.
const reserved = await conferences.execute(
  'devconf',
  { type: 'reserve', seats: 3, orderId: 'o-1' },
  { eventIds: ['o-1:reserve'] },
);
console.log(`reserved 3, ${reserved.state.left} left at version ${reserved.version}`);
try {
  await conferences.execute('devconf', { type: 'reserve', seats: 4, orderId: 'o-2' });
} catch (error) {
  console.log(`refused: ${(error as Error).message}`);
}
await conferences.execute('devconf', { type: 'reserve', seats: 1, orderId: 'o-3' });
await conferences.execute('devconf', { type: 'reserve', seats: 1, orderId: 'o-4' }); // version 4: snapshot
// handle() takes the decision inline instead of the decider's decide.
await conferences.handle('devconf', (state) => ({ type: 'SeatsAdded', data: { seats: 10 - state.left } }));

const loaded = await conferences.load('devconf'); // the snapshot at 4, then event 5
console.log(`loaded: ${loaded.state.left} left at version ${loaded.version}`);
await store.close();
