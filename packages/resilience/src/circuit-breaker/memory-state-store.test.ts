import { describe } from 'node:test';
import { circuitStateStoreContract } from './circuit-state-store.contract.js';
import { MemoryCircuitStateStore } from './memory-state-store.js';

describe('circuit state store contract: memory', () => {
  // One process: both "instances" share the one store.
  const store = new MemoryCircuitStateStore();
  circuitStateStoreContract(() => ({ a: store, b: store }));
});
