/** Leader Election chaos on Redis leases (see fixtures/leader-chaos.ts). */
import { after, describe, it } from 'node:test';
import { redisForSuite } from '@stratus/testkit';
import { assertChaosOutcome, CHAOS_MS, runLeaderChaos } from './fixtures/leader-chaos.js';

const suite = await redisForSuite('coordination-chaos');
after(() => suite.release());

describe('Leader Election chaos: Redis', { skip: suite.skip }, () => {
  it('five candidates, leaders killed and paused at random: fenced terms never overlap, failovers in bound', async (t) => {
    const result = await runLeaderChaos(
      { BACKEND: 'redis', TARGET: suite.url as string, PREFIX: `${suite.keyPrefix}chaos:` },
      CHAOS_MS,
    );
    t.diagnostic(JSON.stringify(result));
    assertChaosOutcome(result);
  });
});
