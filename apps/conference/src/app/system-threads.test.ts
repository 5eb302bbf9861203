import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { embeddedThreads, publishedConference, scenarios } from './fixtures/system-scenarios.js';

describe('the conference system on the embedded default with its background thread (as npm start runs it)', () => {
  scenarios(embeddedThreads);

  test('the background thread passes on its stats and readiness; stop ends it', async () => {
    const { system, stop } = await embeddedThreads();
    try {
      await publishedConference(system, { general: 1, workshop: 1 });
      assert.equal(system.ready(), true);
      assert.equal(await system.liveWorkers(), 1, 'the background thread is the worker');
      const stats = await system.backgroundStats();
      assert.deepEqual(stats.viewLag.map((lag) => lag.view).sort(), ['conferences', 'orders']);
      const registry = new Registry();
      system.registerMetrics(registry);
      const metrics = await registry.metrics();
      assert.match(metrics, /conference_view_lag_events\{view="orders"\} \d+/);
    } finally {
      await stop();
    }
    assert.equal(system.ready(), false);
  });
});
