import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { runFuzz, type Send } from './fuzz-run.js';

const requests = fc.nat({ max: 1_000 }).map((n) => ({ method: 'GET', url: `/n/${n}`, headers: {} }));

test('runFuzz reports the smallest request answered 5xx, and counts every answer', async () => {
  const send: Send = async (request) => {
    const n = Number(request.url.slice(3));
    return n >= 10 ? { statusCode: 500, body: 'boom' } : { statusCode: 200, body: 'ok' };
  };
  const report = await runFuzz(send, [{ name: 'numbers', requests }], { seed: 1, runs: 50 });
  assert.equal(report.failures.length, 1);
  assert.equal(report.failures[0]?.target, 'numbers');
  assert.equal(report.failures[0]?.request, 'GET "/n/10" []');
  assert.equal(report.failures[0]?.answer, '500 boom');
  const counted = Object.values(report.statuses).reduce((sum, count) => sum + count, 0);
  assert.equal(counted, report.requests);
  assert.deepEqual(report.crashes, []);
});

test('runFuzz reports unhandled rejections and sends that throw', async () => {
  let sent = 0;
  const send: Send = async () => {
    if (++sent === 3) {
      void Promise.reject(new Error('nobody waits for me'));
      // The rejection is reported once the microtasks have run.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (sent === 5) throw new Error('the server is gone');
    return { statusCode: 204, body: '' };
  };
  // The test runner's own listener would fail this test on the rejection: it is left out while this runs.
  const runners = process.listeners('unhandledRejection');
  process.removeAllListeners('unhandledRejection');
  const report = await runFuzz(send, [{ name: 'n', requests }], { seed: 2, runs: 10, maxShrinks: 0 }).finally(
    () => {
      for (const listener of runners) process.on('unhandledRejection', listener);
    },
  );
  assert.equal(report.crashes.length, 1);
  assert.match(report.crashes[0] ?? '', /^unhandled rejection: Error: nobody waits for me/);
  assert.match(report.failures[0]?.answer ?? '', /^the send threw Error: the server is gone/);
});
