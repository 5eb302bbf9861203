import { blobStoreContract } from './blob-store.contract.js';
import { MemoryBlobStore } from './memory-blob-store.js';

blobStoreContract('memory', async (clock) => ({
  store: new MemoryBlobStore({ clock }),
  cleanup: async () => {},
}));
