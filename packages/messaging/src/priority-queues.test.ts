import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import { PriorityQueues } from './priority-queues.js';

const T0 = Date.UTC(2026, 0, 1);

describe('PriorityQueues', () => {
  it('validates its levels', () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    assert.throws(() => new PriorityQueues(messaging, []), InvalidOptionsError);
    assert.throws(() => new PriorityQueues(messaging, [{ queue: 'high', minPriority: 5 }]), /lowest level/);
    assert.throws(
      () =>
        new PriorityQueues(messaging, [
          { queue: 'a', minPriority: 0 },
          { queue: 'b', minPriority: 0 },
        ]),
      /same priority/,
    );
    assert.throws(() => new PriorityQueues(messaging, [{ queue: 'a', minPriority: 12 }]), {
      option: 'levels[0].minPriority',
    });
  });

  it('routes by priority band', () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    const queues = new PriorityQueues(messaging, [
      { queue: 'low', minPriority: 0 },
      { queue: 'high', minPriority: 7 },
      { queue: 'mid', minPriority: 4 },
    ]);
    assert.deepEqual(
      [0, 3, 4, 6, 7, 9].map((p) => queues.queueFor(p)),
      ['low', 'low', 'mid', 'mid', 'high', 'high'],
    );
  });

  it('the catalogue sample: two consumers on high and one on low; high goes faster and low still progresses', async () => {
    const clock = new VirtualClock({ now: T0 });
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
    const queues = new PriorityQueues<{ n: number; priority: string }>(messaging, [
      { queue: 'orders-high', minPriority: 5 },
      { queue: 'orders-low', minPriority: 0 },
    ]);
    await queues.createQueues({ lockDurationMs: 60_000 });
    // The sample's sender: a batch of 10 low, then 10 high; each message takes 2 s to process.
    await queues.sendBatch(
      Array.from({ length: 10 }, (_, n) => ({ body: { n, priority: 'low' }, priority: 0 })),
    );
    await queues.sendBatch(
      Array.from({ length: 10 }, (_, n) => ({ body: { n, priority: 'high' }, priority: 9 })),
    );
    const finished: { priority: string; at: number }[] = [];
    const consumers = queues.consume(
      async (message) => {
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 2000));
        finished.push({ priority: message.body.priority, at: clock.now() - T0 });
      },
      { 'orders-high': { concurrency: 2 }, 'orders-low': { concurrency: 1 } },
    );
    await waitUntil(
      async () => (await messaging.queue('orders-high').stats()).locked === 2,
      'both high consumers busy',
    );
    for (let second = 0; second < 20 && finished.length < 20; second++) await clock.advance(1000);
    await Promise.all(consumers.map((consumer) => consumer.close()));
    const high = finished.filter((f) => f.priority === 'high').map((f) => f.at);
    const low = finished.filter((f) => f.priority === 'low').map((f) => f.at);
    assert.equal(high.length, 10);
    assert.equal(Math.max(...high), 10_000, 'high drains in 10 s with two consumers');
    assert.equal(low.length, 10);
    assert.equal(Math.max(...low), 20_000, 'low drains in 20 s with one consumer');
    assert.equal(
      low.filter((at) => at <= 10_000).length,
      5,
      'low progressed while high was busy (no starvation)',
    );
  });
});
