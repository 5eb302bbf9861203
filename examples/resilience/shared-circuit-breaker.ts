// A circuit shared by every instance of a service: when the calls of one instance trip it, every instance sees it
// open, with the same open-until time. Here two breakers in one process share a MemoryCircuitStateStore; instances
// in several processes share a RedisCircuitStateStore or a PostgresCircuitStateStore the same way.
// Prints:
//   instance A: closed -> open (trip-rule)
//   instance B: closed -> open (shared)
//   instance B refuses without calling: ERR_STRATUS_BROKEN_CIRCUIT
import { type CircuitBreakerPolicy, circuitBreaker, MemoryCircuitStateStore } from '@stratus/resilience';

const store = new MemoryCircuitStateStore();
const instance = (label: string): CircuitBreakerPolicy => {
  const breaker = circuitBreaker({
    name: 'payments-api', // the circuit's key in the store
    trip: { kind: 'consecutive-failures', failures: 2 },
    openMs: 30_000,
    shared: { store, mode: 'shared' },
  });
  breaker.events.on((event) => {
    if (event.type === 'state-change') {
      console.log(`instance ${label}: ${event.from} -> ${event.to} (${event.reason})`);
    }
  });
  return breaker;
};
const a = instance('A');
const b = instance('B');

for (let i = 0; i < 2; i++) await a.execute(() => Promise.reject(new Error('HTTP 500'))).catch(() => {});
await a.sync(); // writes happen in the background; settle them now for this demonstration
await b.sync();

await b
  .execute(async () => 'charged')
  .catch((error: { code: string }) => {
    console.log(`instance B refuses without calling: ${error.code}`);
  });
await Promise.all([a.dispose(), b.dispose()]);
