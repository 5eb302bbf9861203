/** Workflow chaos on SQLite (see fixtures/workflow-chaos.ts). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runWorkflowChaos } from './fixtures/workflow-chaos.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-workflow-chaos-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

describe('Workflow chaos: SQLite', () => {
  it('1,000 three-step workflows while Schedulers, Agents and Supervisors are SIGKILLed: all end, effects once', async (t) => {
    const result = await runWorkflowChaos({
      BACKEND: 'sqlite',
      TARGET: join(directory, 'workflows.db'),
      SCHEMA: 'chaos',
    });
    t.diagnostic(JSON.stringify(result));
    assert.deepEqual(result.crashed, [], 'no worker died by itself');
    assert.equal(result.byStatus.running ?? 0, 0, `no workflow is stuck: ${JSON.stringify(result.stuck)}`);
    assert.equal((result.byStatus.completed ?? 0) + (result.byStatus.failed ?? 0), result.workflows);
    assert.deepEqual(
      result.broken,
      [],
      'completed workflows have their three effects; failed ones their alert',
    );
    assert.ok(result.effects >= 3 * (result.byStatus.completed ?? 0));
    for (const role of ['scheduler', 'agent', 'supervisor'] as const)
      assert.ok(result.kills[role] > 0, `a ${role} was killed`);
  });
});
