// A user's project with the packed packages installed: every public entry point type-checks under NodeNext
// resolution, and each package runs one small example.
import assert from 'node:assert/strict';
import * as cli from '@stratus/cli';
import * as coordination from '@stratus/coordination';
import * as core from '@stratus/core';
import * as data from '@stratus/data';
import * as edge from '@stratus/edge';
import * as eventsourcing from '@stratus/eventsourcing';
import * as messaging from '@stratus/messaging';
import * as messagingTelemetry from '@stratus/messaging/opentelemetry';
import * as resilience from '@stratus/resilience';
import * as resilienceTelemetry from '@stratus/resilience/opentelemetry';
import * as sql from '@stratus/sql';
import * as testkit from '@stratus/testkit';

const examples: Record<string, () => Promise<string>> = {
  async core() {
    const backoff = core.exponentialBackoff({ initialMs: 100, maxMs: 1000 });
    const delays = [1, 2, 3, 4, 5].map((attempt) => backoff.delay(attempt, 0));
    assert.deepEqual(delays, [100, 200, 400, 800, 1000]);
    return `exponential backoff ${delays.join(', ')} ms`;
  },

  async sql() {
    const database = sql.openSqlite(':memory:');
    try {
      database.exec('CREATE TABLE t (n INTEGER)');
      database.transaction(() => database.prepare('INSERT INTO t VALUES (?)').run(42));
      assert.equal(database.prepare('SELECT n FROM t').get<{ n: number }>()?.n, 42);
      return `openSqlite(':memory:') on ${database.driver}`;
    } finally {
      database.close();
    }
  },

  async resilience() {
    let calls = 0;
    const retried = await resilience
      .retry({ maxAttempts: 3, backoff: core.constantBackoff(0), handle: { error: () => true } })
      .execute(async () => {
        if (++calls < 3) throw new Error('flaky');
        return calls;
      });
    const breaker = resilience.circuitBreaker({ trip: { kind: 'consecutive-failures', failures: 2 } });
    for (let i = 0; i < 2; i++)
      await assert.rejects(breaker.execute(() => Promise.reject(new Error('down'))));
    await assert.rejects(
      breaker.execute(async () => 'never'),
      resilience.BrokenCircuitError,
    );
    assert.equal(typeof resilienceTelemetry.instrumentOpenTelemetry, 'function');
    return `retry succeeded on attempt ${retried}, circuit ${breaker.state} after 2 failures`;
  },

  async messaging() {
    const bus = new messaging.Messaging({ backend: new messaging.MemoryMessageBackend() });
    await bus.createQueue('orders');
    await bus.queue('orders').send({ orderId: 42 });
    const received = new Promise<number>((resolve) => {
      bus.consume<{ orderId: number }>('orders', async (message) => resolve(message.body.orderId));
    });
    assert.equal(await received, 42);
    assert.equal(typeof messagingTelemetry.instrumentQueueMetrics, 'function');
    await bus.close();
    return 'memory backend: sent and consumed order 42';
  },

  async data() {
    const cache = data.cacheAside({ store: new data.MemoryCacheStore() });
    let loads = 0;
    const load = async () => ++loads;
    const values = await Promise.all([cache.getOrLoad('k', load), cache.getOrLoad('k', load)]);
    assert.deepEqual(values, [1, 1]);
    assert.equal(await cache.getOrLoad('k', load), 1);
    cache.close();
    return `cache-aside on the memory store: 3 reads, ${loads} load`;
  },

  async eventsourcing() {
    const store = new eventsourcing.EventStore({ backend: new eventsourcing.MemoryEventStoreBackend() });
    await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: { seats: 2 } }]);
    await store.appendToStream('order-1', [{ type: 'OrderConfirmed', data: {} }], { expectedVersion: 1 });
    const events = await store.readStream('order-1');
    assert.deepEqual(
      events.map((e) => e.type),
      ['OrderPlaced', 'OrderConfirmed'],
    );
    return `memory event store: appended and read ${events.length} events`;
  },

  async coordination() {
    const leases = new coordination.MemoryLeaseStore();
    const now = Date.now();
    const first = await leases.acquire({ name: 'leader', owner: 'a', ttlMs: 1000, now });
    const second = await leases.acquire({ name: 'leader', owner: 'b', ttlMs: 1000, now });
    assert.ok(first.acquired && !second.acquired);
    return `memory lease store: granted to a with fencing token ${first.grant.token}, refused to b`;
  },

  async edge() {
    const { createServer } = await import('node:http');
    const upstream = createServer((request, response) => response.end(`upstream saw ${request.url}`));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as { port: number };
    const gateway = await edge.startGateway({
      config: {
        upstreams: { app: { targets: [`http://127.0.0.1:${port}`] } },
        routes: [{ match: { prefix: '/api' }, upstream: 'app', rewrite: { prefix: '/' } }],
      },
    });
    try {
      const answer = await (await fetch(`${gateway.url}/api/x`)).text();
      assert.equal(answer, 'upstream saw /x');
      assert.equal((await fetch(`${gateway.url}/other`)).status, 404);
      return `gateway routed /api/x: "${answer}"`;
    } finally {
      await gateway.close();
      upstream.close();
    }
  },

  async testkit() {
    const clock = new testkit.VirtualClock();
    let fired = false;
    clock.setTimeout(() => {
      fired = true;
    }, 1000);
    await clock.advance(1000);
    assert.ok(fired);
    return 'virtual clock fired a 1 s timer';
  },

  async cli() {
    assert.equal(typeof cli.main, 'function');
    return 'main() exported (the stratus command is run through npx)';
  },
};

for (const [name, example] of Object.entries(examples)) console.log(`@stratus/${name}: ${await example()}`);
