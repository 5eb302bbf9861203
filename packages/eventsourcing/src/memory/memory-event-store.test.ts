import { eventStoreBackendContract } from '../contract.js';
import { MemoryEventStoreBackend } from './memory-event-store.js';

eventStoreBackendContract('memory', async () => new MemoryEventStoreBackend());
