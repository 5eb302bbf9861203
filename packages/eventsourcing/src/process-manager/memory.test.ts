import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import { processManagerContract } from './process-manager.contract.js';

processManagerContract('memory', {
  async open() {
    const backend = new MemoryEventStoreBackend();
    return {
      store: new EventStore({ backend }),
      reopen: async () => new EventStore({ backend }),
    };
  },
  async close() {},
});
