import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runDemo } from './demo.js';
import { callOutcomes } from './window-stats.js';

describe('resilience demo', () => {
  it('runs its whole story against a real loopback upstream and stops by itself', async () => {
    const output: string[] = [];
    const summary = await runDemo({
      durationS: 6,
      rps: 150,
      concurrency: 32,
      limitRps: 120,
      live: false,
      colour: false,
      write: (text) => output.push(text),
    });
    const calls = callOutcomes.reduce((sum, outcome) => sum + summary.totals[outcome], 0);
    assert.ok(calls > 300, `expected a steady load, saw ${calls} calls`);
    assert.ok(summary.totals.ok > 0, 'some calls succeed');
    // The outage phase returns only 503s: the failure-ratio rule must open the breaker and fast-fail calls.
    assert.ok(summary.transitions.includes('closed→open'), `transitions: ${summary.transitions.join(', ')}`);
    assert.ok(summary.totals['broken-circuit'] > 0, 'the open breaker fails calls fast');
    assert.ok(summary.retries > 0, 'transient failures are retried');
    assert.ok(summary.upstreamRequests >= summary.totals.ok, 'every success reached the upstream');
    assert.ok(
      output.some((line) => line.includes('breaker=open')),
      'the live output shows the open breaker',
    );
  });
});
