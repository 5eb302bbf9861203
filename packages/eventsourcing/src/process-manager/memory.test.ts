import { EventStore } from '../event-store.js';
import { MemoryEventStore } from '../memory/memory-event-store.js';
import { processManagerContract } from './process-manager.contract.js';

processManagerContract('memory', {
  async open() {
    const backend = new MemoryEventStore();
    return {
      store: new EventStore({ backend }),
      reopen: async () => new EventStore({ backend }),
    };
  },
  async close() {},
});
