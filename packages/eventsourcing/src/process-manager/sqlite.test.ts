import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventStore } from '../event-store.js';
import { SqliteEventStoreBackend } from '../sqlite/sqlite-event-store.js';
import { processManagerContract } from './process-manager.contract.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-process-manager-'));
const opened: EventStore[] = [];
let files = 0;

processManagerContract('SQLite', {
  async open() {
    const path = join(directory, `pm-${++files}.db`);
    // Each handle opens the file on its own, as another process would.
    const reopen = async () => {
      const store = new EventStore({ backend: new SqliteEventStoreBackend({ path }) });
      opened.push(store);
      return store;
    };
    return { store: await reopen(), reopen };
  },
  async close() {
    for (const store of opened) await store.close();
    rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
  },
});
