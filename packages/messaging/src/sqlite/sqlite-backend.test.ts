import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe } from 'node:test';
import { messageBackendContract } from '../contract.js';
import { type SqliteDriverName, sqliteDriverAvailable } from './driver.js';
import { sqliteMessageBackend } from './sqlite-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-sqlite-backend-'));
after(() => rmSync(directory, { recursive: true, force: true }));

for (const driver of ['node:sqlite', 'better-sqlite3'] as const satisfies SqliteDriverName[]) {
  const available = sqliteDriverAvailable(driver);
  if (available !== true) {
    describe(`MessageBackend contract: sqlite (${driver})`, { skip: available }, () => {});
    continue;
  }
  messageBackendContract(`sqlite (${driver})`, async () =>
    sqliteMessageBackend({ path: join(directory, `contract-${driver.replace(':', '-')}.db`), driver }),
  );
}
