import { MemorySagaStore } from './memory-saga-store.js';
import { sagaStoreContract } from './saga-store.contract.js';

sagaStoreContract('memory', async () => new MemorySagaStore());
