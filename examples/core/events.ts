// Typed events: every Stratus component emits typed events on its own emitter, and every event also goes to the
// process-wide `stratus:events` diagnostics channel, so one telemetry adapter can watch a whole process.
// Prints:
//   nobody listens yet: active = false
//   listener: door "front" opened by ada
//   channel: door "front" opened
//   listener: door "front" closed by ada
//   channel: door "front" closed
//   once: the next closing was by grace
import diagnosticsChannel from 'node:diagnostics_channel';
import { EventEmitter, type StratusEvent, stratusEventChannel } from '@stratus/core';

interface DoorEvent extends StratusEvent {
  readonly component: 'door';
  readonly type: 'opened' | 'closed';
  readonly by: string;
}

const events = new EventEmitter<DoorEvent>();
// `active` lets a hot path skip building an event nobody would hear.
console.log(`nobody listens yet: active = ${events.active}`);

const emit = (type: DoorEvent['type'], by: string) =>
  events.emit({ component: 'door', name: 'front', type, at: Date.now(), by });

const off = events.on((event) =>
  console.log(`listener: ${event.component} "${event.name}" ${event.type} by ${event.by}`),
);
const onChannel = (message: unknown) => {
  const event = message as StratusEvent;
  console.log(`channel: ${event.component} "${event.name}" ${event.type}`);
};
diagnosticsChannel.subscribe(stratusEventChannel.name, onChannel);

emit('opened', 'ada');
emit('closed', 'ada');
off();
diagnosticsChannel.unsubscribe(stratusEventChannel.name, onChannel);

const closed = events.once((event) => event.type === 'closed');
emit('opened', 'grace');
emit('closed', 'grace');
console.log(`once: the next closing was by ${(await closed).by}`);
