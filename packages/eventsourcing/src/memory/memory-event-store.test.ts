import { eventStoreBackendContract } from '../event-store-backend.contract.js';
import { subscriptionContract } from '../subscription.contract.js';
import { MemoryEventStoreBackend } from './memory-event-store.js';

eventStoreBackendContract('memory', async () => new MemoryEventStoreBackend());
subscriptionContract('memory', async () => new MemoryEventStoreBackend());
