import { leaseStoreContract } from './lease-store.contract.js';
import { MemoryLeaseStore } from './memory-lease-store.js';

leaseStoreContract('memory', async () => new MemoryLeaseStore());
