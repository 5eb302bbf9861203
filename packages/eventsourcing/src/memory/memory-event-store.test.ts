import { eventStoreBackendContract } from '../event-store-backend.contract.js';
import { MemoryEventStoreBackend } from './memory-event-store.js';

eventStoreBackendContract('memory', async () => new MemoryEventStoreBackend());
