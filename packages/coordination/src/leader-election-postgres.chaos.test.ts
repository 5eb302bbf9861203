/** Leader Election chaos on PostgreSQL leases (see fixtures/leader-chaos.ts). */
import { after, describe, it } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import { assertChaosOutcome, CHAOS_MS, runLeaderChaos } from './fixtures/leader-chaos.js';

const suite = await postgresForSuite('coordination-chaos');
after(() => suite.release());

describe('Leader Election chaos: PostgreSQL', { skip: suite.skip }, () => {
  it('five candidates, leaders killed and paused at random: fenced terms never overlap, failovers in bound', async (t) => {
    const result = await runLeaderChaos(
      { BACKEND: 'postgres', TARGET: suite.url as string, SCHEMA: 'chaos' },
      CHAOS_MS,
    );
    t.diagnostic(JSON.stringify(result));
    assertChaosOutcome(result);
  });
});
