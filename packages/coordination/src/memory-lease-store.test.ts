import { leaseStoreContract } from './lease-contract.js';
import { MemoryLeaseStore } from './memory-lease-store.js';

leaseStoreContract('memory', async () => new MemoryLeaseStore());
