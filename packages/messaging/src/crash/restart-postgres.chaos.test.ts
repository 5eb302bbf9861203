/** The crash test on PostgreSQL with the server restarted mid-run (see restart-harness.ts). */
import { after, describe, it } from 'node:test';
import { findPostgresBinaries, type PostgresServer, startPostgres } from '@stratus/testkit';
import { crashAndCheck } from './harness.js';
import { assertRodeOutRestart, ownServer, restartMidRun } from './restart-harness.js';

const pgBinaries = findPostgresBinaries();
const pg = await ownServer('PostgreSQL', 'reason' in pgBinaries ? pgBinaries.reason : true, () =>
  startPostgres(),
);

describe('crash test on PostgreSQL with the server restarted mid-run', { skip: pg.skip }, () => {
  after(() => pg.server?.stop());
  it('takes effect exactly once for each of 10,000 messages; everyone reconnects', async () => {
    const server = pg.server as PostgresServer;
    const { window, disrupt } = restartMidRun(server);
    const report = await crashAndCheck('postgres, restarted', server.url, 4, {
      disrupt,
      spared: 1,
      settingsCacheMs: 0,
    });
    assertRodeOutRestart(report, window);
  });
});
