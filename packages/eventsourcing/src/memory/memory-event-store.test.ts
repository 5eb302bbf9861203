import { eventStoreBackendContract } from '../event-store-backend.contract.js';
import { MemoryEventStore } from './memory-event-store.js';

eventStoreBackendContract('memory', async () => new MemoryEventStore());
