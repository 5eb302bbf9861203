import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineWorkflow } from './definition.js';
import { InvalidWorkflowDefinitionError } from './errors.js';

describe('defineWorkflow', () => {
  it('compiles steps with their kinds, budgets and thresholds', () => {
    const definition = defineWorkflow({
      name: 'order',
      version: 2,
      stepTimeoutMs: 5_000,
      maxFailures: 4,
      steps: [
        { name: 'reserve', run: () => 1, timeoutMs: 100 },
        { name: 'charge', agent: 'payments', maxFailures: 2 },
        { name: 'cool-off', sleepMs: 1_000 },
        { name: 'approval', waitFor: 'approved', waitMs: 60_000, onTimeout: { goto: 'ship' } },
        { name: 'ship', run: () => 2 },
      ],
    });
    assert.equal(definition.key, 'order@2');
    assert.deepEqual(
      definition.steps.map((s) => [s.name, s.kind, s.timeoutMs, s.maxFailures, s.timeoutGoto]),
      [
        ['reserve', 'run', 100, 4, undefined],
        ['charge', 'agent', 5_000, 2, undefined],
        ['cool-off', 'sleep', 5_000, 4, undefined],
        ['approval', 'wait', 5_000, 4, 4],
        ['ship', 'run', 5_000, 4, undefined],
      ],
    );
  });

  it('refuses invalid definitions', () => {
    const bad = [
      null,
      { name: '', steps: [{ name: 'a', run: () => 1 }] },
      { name: 'x', version: 0, steps: [{ name: 'a', run: () => 1 }] },
      { name: 'x', steps: [] },
      {
        name: 'x',
        steps: [
          { name: 'a', run: () => 1 },
          { name: 'a', run: () => 1 },
        ],
      },
      { name: 'x', steps: [{ name: 'a' }] },
      { name: 'x', steps: [{ name: 'a', run: () => 1, agent: 'q' }] },
      { name: 'x', steps: [{ name: 'a', run: 'no' }] },
      { name: 'x', steps: [{ name: 'a', run: () => 1, timeoutMs: 0 }] },
      { name: 'x', steps: [{ name: 'a', sleepMs: -1 }] },
      { name: 'x', steps: [{ name: 'a', waitFor: 'go' }] },
      {
        name: 'x',
        steps: [
          { name: 'a', run: () => 1 },
          { name: 'b', waitFor: 'go', waitMs: 1, onTimeout: { goto: 'a' } },
        ],
      },
      { name: 'x', maxFailures: 0, steps: [{ name: 'a', run: () => 1 }] },
    ];
    for (const definition of bad) {
      assert.throws(
        () => defineWorkflow(definition as never),
        InvalidWorkflowDefinitionError,
        JSON.stringify(definition),
      );
    }
  });
});
