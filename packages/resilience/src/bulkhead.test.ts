import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Clock, InvalidOptionsError, OperationCancelledError, sleep } from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { type BulkheadEvent, type BulkheadOptions, bulkhead } from './bulkhead.js';
import { BulkheadRejectedError } from './errors.js';
import type { ExecuteContext } from './policy.js';

/** A promise the test settles by hand. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('bulkhead', () => {
  it('validates its options', () => {
    const bad: [Partial<BulkheadOptions>, string][] = [
      [{ maxConcurrent: 0 }, 'maxConcurrent'],
      [{ maxConcurrent: 1.5 }, 'maxConcurrent'],
      [{ maxConcurrent: Number.POSITIVE_INFINITY }, 'maxConcurrent'],
      [{ maxConcurrent: 1, maxQueued: -1 }, 'maxQueued'],
      [{ maxConcurrent: 1, maxQueued: 0.5 }, 'maxQueued'],
      [{ maxConcurrent: 1, queueTimeoutMs: -5 }, 'queueTimeoutMs'],
      [{ maxConcurrent: 1, queueTimeoutMs: 0 }, 'queueTimeoutMs'],
      [{ maxConcurrent: 1, partitions: { gold: { maxConcurrent: 0 } } }, 'partitions.gold.maxConcurrent'],
      [{ maxConcurrent: 1, partitions: { gold: { maxQueued: -2 } } }, 'partitions.gold.maxQueued'],
    ];
    for (const [options, option] of bad) {
      assert.throws(
        () => bulkhead(options as BulkheadOptions),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        JSON.stringify(options),
      );
    }
    assert.equal(bulkhead({ maxConcurrent: 2, maxQueued: Number.POSITIVE_INFINITY }).queueSlots, Infinity);
  });

  it('passes results, errors and the caller signal through, and frees the slot either way', async () => {
    const b = bulkhead({ maxConcurrent: 1 });
    const controller = new AbortController();
    assert.equal(
      await b.execute(({ signal }) => (signal === controller.signal ? 'same' : 'other'), {
        signal: controller.signal,
      }),
      'same',
    );
    assert.equal(await b.execute(() => 42), 42);
    const boom = new Error('boom');
    assert.equal(
      await rejection(
        b.execute(() => {
          throw boom;
        }),
      ),
      boom,
    );
    assert.equal(await rejection(b.execute(() => Promise.reject(boom))), boom);
    assert.deepEqual(b.stats(), {
      active: 0,
      queued: 0,
      maxConcurrent: 1,
      maxQueued: 0,
      executionSlots: 1,
      queueSlots: 0,
    });
  });

  it('never runs more than maxConcurrent calls at once', async () => {
    const clock = new VirtualClock();
    const b = bulkhead({ maxConcurrent: 3, maxQueued: Number.POSITIVE_INFINITY, clock });
    let running = 0;
    let maxRunning = 0;
    const calls = Array.from({ length: 40 }, (_, i) =>
      b.execute(async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await sleep(clock, 10 + ((i * 7) % 13));
        running--;
        return i;
      }),
    );
    assert.equal(b.active, 3);
    assert.equal(b.queued, 37);
    assert.equal(b.executionSlots, 0);
    await clock.runAll();
    assert.deepEqual(
      await Promise.all(calls),
      Array.from({ length: 40 }, (_, i) => i),
    );
    assert.equal(maxRunning, 3);
    assert.equal(b.active + b.queued, 0);
  });

  it('starts queued calls in FIFO order', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 10 });
    const gate = deferred();
    const started: number[] = [];
    const first = b.execute(() => gate.promise);
    const rest = [1, 2, 3, 4, 5].map((n) =>
      b.execute(() => {
        started.push(n);
      }),
    );
    assert.deepEqual(started, []);
    gate.resolve();
    await Promise.all([first, ...rest]);
    assert.deepEqual(started, [1, 2, 3, 4, 5]);
  });

  it('rejects at once when slots and queue are full', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 1, name: 'db' });
    const events: BulkheadEvent[] = [];
    b.events.on((event) => events.push(event));
    const gate = deferred();
    const running = b.execute(() => gate.promise);
    const queued = b.execute(() => 'queued');
    const error = await rejection(b.execute(() => 'never'));
    assert.ok(error instanceof BulkheadRejectedError);
    assert.equal(error.reason, 'full');
    assert.equal(error.code, 'ERR_STRATUS_BULKHEAD_REJECTED');
    assert.equal(b.queueSlots, 0);
    gate.resolve();
    await running;
    assert.equal(await queued, 'queued');
    assert.deepEqual(
      events.map((e) => [e.type, e.name, e.component, e.partition]),
      [
        ['queued', 'db', 'bulkhead', undefined],
        ['rejected', 'db', 'bulkhead', undefined],
        ['dequeued', 'db', 'bulkhead', undefined],
      ],
    );
  });

  it('rejects a call that waited longer than queueTimeoutMs and frees its place', async () => {
    const clock = new VirtualClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 2, queueTimeoutMs: 100, clock });
    const events: BulkheadEvent[] = [];
    b.events.on((event) => events.push(event));
    const running = b.execute(() => sleep(clock, 250));
    const early = rejection(b.execute(() => 'early'));
    await clock.advance(60);
    const late = rejection(b.execute(() => 'late'));
    await clock.advance(40);
    const earlyError = await early;
    assert.ok(earlyError instanceof BulkheadRejectedError && earlyError.reason === 'queue-timeout');
    assert.equal(b.queued, 1);
    await clock.advance(60);
    assert.ok((await late) instanceof BulkheadRejectedError);
    assert.equal(b.queued, 0);
    await clock.runAll();
    await running;
    assert.equal(clock.pendingTimers, 0);
    const timedOut = events.filter((e) => e.type === 'dequeued');
    assert.deepEqual(
      timedOut.map((e) => e.type === 'dequeued' && [e.outcome, e.waitedMs]),
      [
        ['timed-out', 100],
        ['timed-out', 100],
      ],
    );
    assert.equal(events.filter((e) => e.type === 'rejected' && e.reason === 'queue-timeout').length, 2);
  });

  it('a queued call that is started clears its queue timer', async () => {
    const clock = new VirtualClock();
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 1, queueTimeoutMs: 100, clock });
    const running = b.execute(() => sleep(clock, 50));
    const queued = b.execute(() => 'ran');
    await clock.advance(50);
    assert.equal(await queued, 'ran');
    await running;
    assert.equal(clock.pendingTimers, 0);
  });

  it('rejects at once a call whose signal is already aborted, without running it', async () => {
    const b = bulkhead({ maxConcurrent: 1 });
    let ran = false;
    const error = await rejection(
      b.execute(
        () => {
          ran = true;
        },
        { signal: AbortSignal.abort('stop') },
      ),
    );
    assert.ok(error instanceof OperationCancelledError && error.reason === 'stop');
    assert.equal(ran, false);
  });

  it('an aborted queued call leaves the queue at once: no slot leaks after 1,000 aborts', async () => {
    const b = bulkhead({ maxConcurrent: 2, maxQueued: 1000 });
    const gates = [deferred(), deferred()];
    const running = gates.map((gate) => b.execute(() => gate.promise));
    const controllers = Array.from({ length: 1000 }, () => new AbortController());
    let ran = 0;
    const queued = controllers.map((controller) =>
      rejection(
        b.execute(
          () => {
            ran++;
          },
          { signal: controller.signal },
        ),
      ),
    );
    assert.equal(b.queued, 1000);
    assert.equal(b.queueSlots, 0);
    for (const [i, controller] of controllers.entries()) {
      controller.abort(`gone ${i}`);
      assert.equal(b.queued, 999 - i, 'the place is freed synchronously');
    }
    const errors = await Promise.all(queued);
    assert.ok(errors.every((e) => e instanceof OperationCancelledError));
    assert.equal((errors[7] as OperationCancelledError).reason, 'gone 7');
    assert.equal(b.queueSlots, 1000);
    // The whole queue is usable again and the running calls still hold exactly their two slots.
    const again = Array.from({ length: 1000 }, (_, i) => b.execute(() => i));
    assert.equal(b.queued, 1000);
    assert.ok((await rejection(b.execute(() => 'over'))) instanceof BulkheadRejectedError);
    for (const gate of gates) gate.resolve();
    await Promise.all(running);
    assert.equal((await Promise.all(again)).length, 1000);
    assert.equal(ran, 0);
    assert.deepEqual([b.active, b.queued], [0, 0]);
  });

  it('aborting a call in the middle of the queue keeps the order of the others', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 5 });
    const gate = deferred();
    const started: number[] = [];
    const first = b.execute(() => gate.promise);
    const controller = new AbortController();
    const calls = [1, 2, 3, 4].map((n) =>
      b
        .execute(
          () => {
            started.push(n);
          },
          n === 2 || n === 4 ? { signal: controller.signal } : {},
        )
        .catch(() => 'aborted'),
    );
    controller.abort();
    gate.resolve();
    await Promise.all([first, ...calls]);
    assert.deepEqual(started, [1, 3]);
  });

  it('does not recurse when queued operations throw synchronously', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: Number.POSITIVE_INFINITY });
    const gate = deferred();
    const first = b.execute(() => gate.promise);
    const calls = Array.from({ length: 20_000 }, () =>
      b
        .execute(() => {
          throw new Error('sync');
        })
        .catch((error: Error) => error.message),
    );
    gate.resolve();
    await first;
    const outcomes = await Promise.all(calls);
    assert.equal(outcomes.filter((m) => m === 'sync').length, 20_000);
    assert.deepEqual([b.active, b.queued], [0, 0]);
  });

  describe('partitions', () => {
    it('isolate keys: a saturated partition does not affect another', async () => {
      const b = bulkhead({ maxConcurrent: 1, maxQueued: 0 });
      const gate = deferred();
      const slow = b.execute(() => gate.promise, { partition: 'tenant-a' });
      const rejected = await rejection(b.execute(() => 'a', { partition: 'tenant-a' }));
      assert.ok(rejected instanceof BulkheadRejectedError);
      assert.equal(rejected.partition, 'tenant-a');
      assert.match(rejected.message, /"tenant-a"/);
      assert.equal(await b.execute(() => 'b', { partition: 'tenant-b' }), 'b');
      assert.equal(await b.execute(() => 'unpartitioned'), 'unpartitioned');
      assert.equal(b.stats('tenant-a').active, 1);
      assert.equal(b.stats('tenant-b').active, 0);
      assert.equal(b.active, 0);
      gate.resolve();
      await slow;
    });

    it('partition(key) is a Policy bound to the key, with its own counters', async () => {
      const b = bulkhead({ maxConcurrent: 2, maxQueued: 1, name: 'api' });
      const events: BulkheadEvent[] = [];
      b.events.on((event) => events.push(event));
      const gold = b.partition('gold');
      assert.equal(gold.key, 'gold');
      assert.equal(gold.name, 'api');
      assert.equal(gold.events, b.events);
      const gates = [deferred(), deferred(), deferred()];
      const controller = new AbortController();
      const calls = gates.map((gate) => gold.execute(() => gate.promise, { signal: controller.signal }));
      assert.deepEqual([gold.active, gold.queued, gold.executionSlots, gold.queueSlots], [2, 1, 0, 0]);
      assert.deepEqual([b.partition('gold').active, b.active, b.stats('silver').active], [2, 0, 0]);
      assert.ok((await rejection(gold.execute(() => 1))) instanceof BulkheadRejectedError);
      for (const gate of gates) gate.resolve();
      await Promise.all(calls);
      assert.deepEqual([gold.active, gold.queued], [0, 0]);
      assert.ok(events.every((e) => e.partition === 'gold'));
      assert.deepEqual(
        events.map((e) => e.type),
        ['queued', 'rejected', 'dequeued'],
      );
    });

    it('apply per-partition overrides from a record or a function', async () => {
      const fromRecord = bulkhead({
        maxConcurrent: 1,
        maxQueued: 3,
        partitions: { gold: { maxConcurrent: 4 } },
      });
      assert.deepEqual(fromRecord.stats('gold'), {
        active: 0,
        queued: 0,
        maxConcurrent: 4,
        maxQueued: 3,
        executionSlots: 4,
        queueSlots: 3,
      });
      assert.equal(fromRecord.stats('constructor').maxConcurrent, 1, 'only own keys of the record count');
      const asked: string[] = [];
      const fromFunction = bulkhead({
        maxConcurrent: 1,
        partitions: (key) => {
          asked.push(key);
          return key.startsWith('vip-') ? { maxConcurrent: 2, maxQueued: 5 } : undefined;
        },
      });
      const gate = deferred();
      const vip = [1, 2, 3].map(() => fromFunction.execute(() => gate.promise, { partition: 'vip-1' }));
      assert.deepEqual([fromFunction.stats('vip-1').active, fromFunction.stats('vip-1').queued], [2, 1]);
      const plain = fromFunction.execute(() => gate.promise, { partition: 'plain' });
      assert.ok(
        (await rejection(fromFunction.execute(() => 0, { partition: 'plain' }))) instanceof
          BulkheadRejectedError,
      );
      gate.resolve();
      await Promise.all([...vip, plain]);
      assert.deepEqual(asked, ['vip-1', 'plain'], 'asked once per partition creation');
      const invalid = bulkhead({ maxConcurrent: 1, partitions: () => ({ maxConcurrent: -1 }) });
      const error = await rejection(invalid.execute(() => 0, { partition: 'x' }));
      assert.ok(error instanceof InvalidOptionsError && error.option === 'partitions.x.maxConcurrent');
    });

    it('drop idle partitions, so memory does not grow with the number of keys', async () => {
      const b = bulkhead({ maxConcurrent: 1, maxQueued: 1 });
      const gates = Array.from({ length: 10 }, () => deferred());
      const busy = gates.flatMap((gate, i) => [
        b.execute(() => gate.promise, { partition: `busy-${i}` }),
        b.execute(() => `queued-${i}`, { partition: `busy-${i}` }),
      ]);
      for (let i = 0; i < 5_000; i++) {
        assert.equal(await b.execute(() => i, { partition: `key-${i}` }), i);
        assert.ok(b.partitionCount <= 64, `${b.partitionCount} partitions held after ${i + 1} keys`);
      }
      // Busy partitions survived every sweep with their state intact.
      for (let i = 0; i < 10; i++)
        assert.deepEqual([b.stats(`busy-${i}`).active, b.stats(`busy-${i}`).queued], [1, 1]);
      for (const gate of gates) gate.resolve();
      const results = await Promise.all(busy);
      assert.deepEqual(
        results.filter((r) => typeof r === 'string'),
        gates.map((_, i) => `queued-${i}`),
      );
    });
  });

  it('a dequeued listener calling back into the bulkhead cannot take the slot being handed out', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 1 });
    let running = 0;
    let peak = 0;
    const gates: ReturnType<typeof deferred<void>>[] = [];
    const op = () => {
      running++;
      peak = Math.max(peak, running);
      const gate = deferred();
      gates.push(gate);
      return gate.promise.finally(() => running--);
    };
    const reentrant: Promise<unknown>[] = [];
    b.events.on((event) => {
      if (event.type === 'dequeued' && reentrant.length === 0) reentrant.push(b.execute(op).catch((e) => e));
    });
    const first = b.execute(op);
    const queued = b.execute(op);
    gates[0]?.resolve();
    await first;
    await flushMicrotasks();
    assert.equal(peak, 1);
    assert.equal(b.active, 1);
    for (const gate of gates) gate.resolve();
    await queued;
    await flushMicrotasks();
    for (const gate of gates) gate.resolve();
    await Promise.all(reentrant);
    assert.equal(peak, 1);
  });

  it("a queued call gets the outer policy's context, attempt number included, as an immediate one does", async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 1 });
    const outer: ExecuteContext = { signal: new AbortController().signal, attempt: 3 };
    const seen: ExecuteContext[] = [];
    const gate = deferred();
    const first = b.execute((context) => {
      seen.push(context);
      return gate.promise;
    }, outer);
    const queued = b.execute((context) => {
      seen.push(context);
    }, outer);
    gate.resolve();
    await Promise.all([first, queued]);
    assert.deepEqual(
      seen.map((context) => [context.attempt, context.signal === outer.signal]),
      [
        [3, true],
        [3, true],
      ],
    );
  });

  it('builds no event objects when nobody listens', async () => {
    const clock = new VirtualClock();
    let reads = 0;
    const counting: Clock = {
      now: () => {
        reads++;
        return clock.now();
      },
      monotonic: () => clock.monotonic(),
      setTimeout: (callback, ms) => clock.setTimeout(callback, ms),
      clearTimeout: (handle) => clock.clearTimeout(handle),
    };
    const b = bulkhead({ maxConcurrent: 1, maxQueued: 1, clock: counting });
    const gate = deferred();
    const calls = [b.execute(() => gate.promise), b.execute(() => 1)];
    await rejection(b.execute(() => 2));
    gate.resolve();
    await Promise.all(calls);
    await flushMicrotasks();
    assert.equal(reads, 0);
  });
});
