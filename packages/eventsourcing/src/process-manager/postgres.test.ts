import { describe } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import { EventStore } from '../event-store.js';
import { PostgresEventStoreBackend } from '../postgres/postgres-event-store.js';
import { processManagerContract } from './process-manager.contract.js';

const suite = await postgresForSuite('process-manager');

if (suite.skip) {
  describe('ProcessManager on PostgreSQL', { skip: suite.skip }, () => {});
} else {
  const url = suite.url;
  const opened: EventStore[] = [];
  let schemas = 0;
  processManagerContract('PostgreSQL', {
    async open() {
      const schema = `pm_${++schemas}`;
      // Each handle has its own pool, as another process would.
      const reopen = async () => {
        const store = new EventStore({
          backend: new PostgresEventStoreBackend({ connectionString: url, schema }),
        });
        opened.push(store);
        return store;
      };
      return { store: await reopen(), reopen };
    },
    async close() {
      for (const store of opened) await store.close();
      await suite.release();
    },
  });
}
