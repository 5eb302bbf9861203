import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitUntil } from '@stratus/testkit';
import { startFaultyUpstream, weighted } from './faulty-upstream.js';

describe('the demo upstream', () => {
  it('answers with the status and Retry-After drawn, and switches behaviour for the next requests', async () => {
    const upstream = await startFaultyUpstream(() => ({ status: 429, retryAfterS: 1 }));
    try {
      const throttled = await fetch(upstream.url);
      await throttled.arrayBuffer();
      assert.equal(throttled.status, 429);
      assert.equal(throttled.headers.get('retry-after'), '1');
      upstream.setBehaviour(() => ({ status: 200 }));
      const ok = await fetch(upstream.url);
      await ok.arrayBuffer();
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('retry-after'), null);
      assert.equal(upstream.requests, 2);
    } finally {
      await upstream.close();
    }
  });

  it('close drops a request whose answer is still delayed', async () => {
    const upstream = await startFaultyUpstream(() => ({ status: 200, delayMs: 60_000 }));
    const pending = fetch(upstream.url);
    await waitUntil(() => upstream.requests === 1, 'the request arrived');
    await upstream.close();
    await assert.rejects(pending);
  });

  it('weighted draws each answer in proportion to its weight', () => {
    const draws = [0, 0.94, 0.95, 0.999];
    const behaviour = weighted(
      [
        [95, { status: 200 }],
        [5, { status: 500 }],
      ],
      () => draws.shift() ?? 0,
    );
    assert.deepEqual(
      [behaviour(), behaviour(), behaviour(), behaviour()].map((a) => a.status),
      [200, 200, 500, 500],
    );
  });
});
