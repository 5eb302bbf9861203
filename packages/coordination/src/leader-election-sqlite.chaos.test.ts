/** Leader Election chaos on SQLite leases (see fixtures/leader-chaos.ts). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { assertChaosOutcome, CHAOS_MS, runLeaderChaos } from './fixtures/leader-chaos.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-chaos-sqlite-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

describe('Leader Election chaos: SQLite', () => {
  it('five candidates, leaders killed and paused at random: fenced terms never overlap, failovers in bound', async (t) => {
    const result = await runLeaderChaos(
      { BACKEND: 'sqlite', TARGET: join(directory, 'leases.db') },
      CHAOS_MS,
    );
    t.diagnostic(JSON.stringify(result));
    assertChaosOutcome(result);
  });
});
