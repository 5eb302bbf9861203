// Deadlines: any number of pending deadlines share one timer per clock, a signal can tell how long it has left,
// and a wait ends the moment its signal aborts.
// Prints:
//   expired: fast
//   expired: slow
//   pending deadlines: 0
//   a signal without a deadline has Infinity ms left
//   this signal has about 200 ms left
//   sleep cancelled: ERR_STRATUS_CANCELLED (shutting down)
import {
  type Deadline,
  DeadlineScheduler,
  OperationCancelledError,
  remainingMs,
  setSignalDeadline,
  sleep,
  systemClock,
} from '@stratus/core';

// A deadline is any object with the scheduler's two bookkeeping fields and an expire() method.
function deadline(name: string): Deadline {
  return { deadlineBucket: undefined, deadlineIndex: 0, expire: () => console.log(`expired: ${name}`) };
}

const scheduler = DeadlineScheduler.for(systemClock);
const now = systemClock.monotonic();
const medium = deadline('medium');
scheduler.add(deadline('fast'), now + 20);
scheduler.add(medium, now + 40);
scheduler.add(deadline('slow'), now + 60);
scheduler.remove(medium); // O(1); the timer is not even cleared, it just finds nothing for it
await sleep(systemClock, 100);
console.log(`pending deadlines: ${scheduler.size}`);

// A timeout records its deadline on the signal it hands out; code holding only the signal can ask.
console.log(`a signal without a deadline has ${remainingMs(new AbortController().signal)} ms left`);
const controller = new AbortController();
setSignalDeadline(controller.signal, systemClock, systemClock.monotonic() + 200);
console.log(`this signal has about ${Math.round(remainingMs(controller.signal) / 100) * 100} ms left`);

const shutdown = new AbortController();
const nap = sleep(systemClock, 60_000, shutdown.signal);
shutdown.abort('shutting down');
try {
  await nap;
} catch (error) {
  if (error instanceof OperationCancelledError) {
    console.log(`sleep cancelled: ${error.code} (${String(error.reason)})`);
  }
}
