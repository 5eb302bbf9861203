import { eventStoreBackendContract } from '../contract.js';
import { MemoryEventStore } from './memory-event-store.js';

eventStoreBackendContract('memory', async () => new MemoryEventStore());
