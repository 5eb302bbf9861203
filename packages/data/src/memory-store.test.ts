import { VirtualClock } from '@stratus/testkit';
import { cacheStoreContract } from './cache-store.contract.js';
import { MemoryCacheStore } from './memory-store.js';

cacheStoreContract('memory', async () => {
  const clock = new VirtualClock();
  // Caches sharing one memory store are instances sharing one backplane: the peer is the same store.
  const store = new MemoryCacheStore({ clock });
  return {
    store,
    peer: store,
    clock,
    lapse: (ms) => clock.advance(ms),
    close: () => store.close(),
  };
});
