import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, InvalidOptionsError } from '@stratus/core';
import { tokenBucket } from '@stratus/resilience';
import { flushMicrotasks, VirtualClock, waitUntil } from '@stratus/testkit';
import {
  DEAD_LETTER_MAX_DELIVERIES,
  type MessageBackend,
  type ReceiveRequest,
  type ReceiveResult,
  type SettleOutcome,
} from './backend.js';
import { ConsumerClosedError } from './consumer.js';
import { MessageLockLostError, PoisonMessageError, UnknownQueueError } from './errors.js';
import type { ConsumerEvent } from './events.js';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import type { QueueOptions } from './options.js';

const T0 = Date.UTC(2026, 0, 1);

async function setup(queueOptions: QueueOptions = {}, backend: MessageBackend = new MemoryMessageBackend()) {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend, clock, retry: false });
  await messaging.createQueue('work', queueOptions);
  const events: ConsumerEvent[] = [];
  messaging.events.on((event) => events.push(event));
  return { clock, messaging, queue: messaging.queue<number>('work'), events };
}

/** A handler whose calls stay open until the test releases them. */
function gatedHandler() {
  const started: number[] = [];
  const gates = new Map<number, { release: () => void; fail: (error: Error) => void }>();
  let running = 0;
  let maxRunning = 0;
  const handler = async (message: { body: number }, context: { signal: AbortSignal }) => {
    started.push(message.body);
    running++;
    maxRunning = Math.max(maxRunning, running);
    try {
      await new Promise<void>((resolve, reject) => {
        gates.set(message.body, { release: resolve, fail: reject });
        context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
      });
    } finally {
      running--;
    }
  };
  return {
    handler,
    started,
    release: (body: number) => gates.get(body)?.release(),
    fail: (body: number, error: Error) => gates.get(body)?.fail(error),
    get maxRunning() {
      return maxRunning;
    },
  };
}

/** The memory backend with `completeAndReceive` (as the two calls in turn), counting what it handed over. */
class ContinuingBackend extends MemoryMessageBackend {
  handedOver = 0;

  async completeAndReceive(
    queue: string,
    lockToken: string,
    request: ReceiveRequest,
  ): Promise<{ outcome: SettleOutcome; received: ReceiveResult }> {
    const [outcome] = (await this.complete(queue, [lockToken], request.now)) as [SettleOutcome];
    if (outcome === 'lost') return { outcome, received: { messages: [], nextDueAt: undefined } };
    const received = await this.receive(queue, request);
    this.handedOver += received.messages.length;
    return { outcome, received };
  }
}

describe('Consumer', () => {
  it('validates its options', async () => {
    const { messaging } = await setup();
    assert.throws(() => messaging.consume('work', async () => {}, { concurrency: 0 }), InvalidOptionsError);
    assert.throws(() => messaging.consume('work', async () => {}, { prefetch: -1 }), { option: 'prefetch' });
    assert.throws(() => messaging.consume('work', 'nope' as never), { option: 'handler' });
    assert.throws(() => messaging.consume('work', async () => {}, { sessionBatch: 0 }), {
      option: 'sessionBatch',
    });
    assert.throws(() => messaging.consume('work', async () => {}, { onPoison: 'park' as never }), {
      option: 'onPoison',
    });
  });

  it('processes every message once, never more than `concurrency` at a time', async () => {
    const { messaging, queue } = await setup();
    await queue.sendBatch(Array.from({ length: 40 }, (_, i) => ({ body: i })));
    const seen: number[] = [];
    let running = 0;
    let maxRunning = 0;
    const consumer = messaging.consume<number>(
      'work',
      async (message) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await flushMicrotasks();
        seen.push(message.body);
        running--;
      },
      { concurrency: 4, prefetch: 2 },
    );
    await waitUntil(async () => (await queue.stats()).length === 0, 'the queue drained');
    await consumer.close();
    assert.deepEqual(
      [...seen].sort((a, b) => a - b),
      Array.from({ length: 40 }, (_, i) => i),
    );
    assert.equal(maxRunning, 4);
    assert.equal(consumer.processed, 40);
  });

  it('picks up messages sent after it went idle', async () => {
    const { messaging, queue } = await setup();
    const seen: number[] = [];
    const consumer = messaging.consume<number>('work', (message) => {
      seen.push(message.body);
    });
    await flushMicrotasks();
    await queue.send(7);
    await waitUntil(() => seen.length === 1, 'the late message was handled');
    await consumer.close();
    assert.deepEqual(seen, [7]);
  });

  it('abandons a failed message with backoff, then dead-letters it with the error after the last delivery', async () => {
    const { messaging, queue, clock, events } = await setup({ maxDeliveryCount: 3 });
    await queue.send(1);
    const attempts: number[] = [];
    const consumer = messaging.consume<number>(
      'work',
      (message) => {
        attempts.push(message.deliveryCount);
        throw new Error(`boom ${message.deliveryCount}`);
      },
      { retryBackoff: constantBackoff(10_000), idlePollMs: 60_000 },
    );
    await waitUntil(() => attempts.length === 1, 'the first attempt');
    await clock.advance(9_999);
    assert.deepEqual(attempts, [1], 'not retried before the backoff');
    await clock.advance(1);
    await waitUntil(() => attempts.length === 2, 'the second attempt');
    await clock.advance(10_000);
    await waitUntil(() => attempts.length === 3, 'the third attempt');
    await waitUntil(async () => (await queue.stats()).deadLettered === 1, 'the message was dead-lettered');
    await consumer.close();
    const [dead] = await queue.listDeadLetters();
    assert.equal(dead?.deadLetterReason, DEAD_LETTER_MAX_DELIVERIES);
    assert.equal(dead?.deadLetterDescription, 'boom 3');
    const failed = events.filter((e) => e.type === 'message-failed');
    assert.deepEqual(
      failed.map((e) => e.type === 'message-failed' && e.retryInMs),
      [10_000, 10_000],
    );
    assert.ok(events.some((e) => e.type === 'message-dead-lettered' && e.description === 'boom 3'));
  });

  it('keeps renewing the lock of a long handler so no one else gets the message', async () => {
    const { messaging, queue, clock } = await setup({ lockDurationMs: 3000 });
    await queue.send(1);
    const gated = gatedHandler();
    const consumer = messaging.consume<number>('work', gated.handler);
    await waitUntil(() => gated.started.length === 1, 'the handler started');
    for (let i = 0; i < 10; i++) await clock.advance(1000);
    assert.deepEqual(await queue.receive(), [], 'the lock still holds after 10 s');
    gated.release(1);
    await waitUntil(async () => (await queue.stats()).length === 0, 'the message was completed');
    await consumer.close();
    assert.deepEqual(gated.started, [1]);
  });

  it('aborts the handler once renewals stop and its lock expires', async () => {
    const { messaging, queue, clock, events } = await setup({ lockDurationMs: 3000 });
    await queue.send(1);
    const reasons: unknown[] = [];
    const consumer = messaging.consume<number>(
      'work',
      async (_message, { signal }) => {
        await new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        reasons.push(signal.reason);
        throw signal.reason;
      },
      { maxRenewMs: 2000 },
    );
    await waitUntil(async () => (await queue.stats()).locked === 1, 'the handler holds the message');
    await clock.advance(2999);
    assert.equal(reasons.length, 0, 'not aborted while the lock holds');
    await clock.advance(1);
    await waitUntil(() => reasons.length === 1, 'the handler was aborted');
    assert.ok(reasons[0] instanceof MessageLockLostError);
    assert.ok(events.some((e) => e.type === 'lock-lost'));
    await waitUntil(
      async () => (await queue.peek())[0]?.deliveryCount === 2,
      'the message was delivered again',
    );
    const closing = consumer.close({ timeoutMs: 100 });
    await clock.advance(100);
    await closing;
  });

  it('shuts down gracefully: finishes running handlers within the deadline and gives the rest back', async () => {
    const { messaging, queue, clock, events } = await setup();
    await queue.sendBatch([{ body: 1 }, { body: 2 }, { body: 3 }]);
    const gated = gatedHandler();
    const consumer = messaging.consume<number>('work', gated.handler, { concurrency: 2, prefetch: 1 });
    await waitUntil(() => gated.started.length === 2, 'two handlers started');
    const closing = consumer.close({ timeoutMs: 5000 });
    await flushMicrotasks();
    gated.release(1);
    await clock.advance(5000);
    await closing;
    const stopped = events.find((e) => e.type === 'consumer-stopped');
    assert.deepEqual(stopped?.type === 'consumer-stopped' && [stopped.drained, stopped.released], [1, 2]);
    const stats = await queue.stats();
    assert.equal(stats.length, 2, 'message 1 completed; 2 (aborted) and 3 (prefetched) are back');
    assert.equal(stats.available, 2);
    const again = await queue.receive({ max: 5 });
    assert.deepEqual(again.map((m) => m.body).sort(), [2, 3]);
  });

  it('ends a graceful shutdown as soon as the running handlers finish, not at the deadline', async () => {
    const { messaging, queue } = await setup();
    await queue.send(1);
    const gated = gatedHandler();
    const consumer = messaging.consume<number>('work', gated.handler);
    await waitUntil(() => gated.started.length === 1, 'the handler started');
    let closed = false;
    const closing = consumer.close({ timeoutMs: 60_000 }).then(() => {
      closed = true;
    });
    await flushMicrotasks();
    assert.equal(closed, false, 'waits for the running handler');
    gated.release(1);
    // The virtual clock stands still: only the handler's end can let the shutdown finish.
    await waitUntil(() => closed, 'the shutdown finished once the handler did');
    await closing;
    assert.equal((await queue.stats()).length, 0);
  });

  it('passes the shutdown reason to handlers cut off at the deadline', async () => {
    const { messaging, queue, clock } = await setup();
    await queue.send(1);
    let reason: unknown;
    const consumer = messaging.consume<number>('work', async (_message, { signal }) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      reason = signal.reason;
    });
    await waitUntil(async () => (await queue.stats()).locked === 1, 'the handler holds the message');
    const closing = consumer.close({ timeoutMs: 100 });
    await clock.advance(100);
    await closing;
    assert.ok(reason instanceof ConsumerClosedError);
  });

  it('levels a burst to the rate limit (Queue-Based Load Leveling)', async () => {
    const { messaging, queue, clock } = await setup();
    await queue.sendBatch(Array.from({ length: 30 }, (_, i) => ({ body: i })));
    const startedAt: number[] = [];
    const limiter = tokenBucket({ capacity: 1, refillRate: 10, clock });
    const consumer = messaging.consume<number>(
      'work',
      () => {
        startedAt.push(clock.now() - T0);
      },
      { concurrency: 10, rateLimit: limiter },
    );
    for (let i = 0; i < 40 && startedAt.length < 30; i++) await clock.advance(100);
    await consumer.close();
    assert.equal(startedAt.length, 30);
    // 10 per second with no burst: the n-th start happens at n × 100 ms.
    startedAt.forEach((at, n) => {
      assert.ok(at >= n * 100 - 1 && at <= n * 100 + 100, `start ${n} at ${at} ms`);
    });
    for (let second = 0; second < 3; second++) {
      const inWindow = startedAt.filter((at) => at >= second * 1000 && at < (second + 1) * 1000).length;
      assert.ok(inWindow <= 10, `${inWindow} starts in second ${second}`);
    }
  });

  for (const [label, backend] of [
    ['', () => new MemoryMessageBackend()],
    [', completing and receiving in one call where the backend can', () => new ContinuingBackend()],
  ] as const) {
    it(`processes each session in order while sessions run in parallel${label}`, async () => {
      const { messaging, clock } = await setup({}, backend());
      await messaging.createQueue('orders', { sessions: true });
      const orders = messaging.queue<{ order: string; step: number }>('orders');
      const batch = [];
      for (let step = 0; step < 5; step++) {
        for (const order of ['A', 'B', 'C']) batch.push({ body: { order, step }, sessionId: order });
      }
      await orders.sendBatch(batch);
      const seen = new Map<string, number[]>();
      const active = new Set<string>();
      let parallel = 0;
      const consumer = messaging.consume<{ order: string; step: number }>(
        'orders',
        async (message, { session }) => {
          const { order, step } = message.body;
          assert.ok(!active.has(order), 'one message of a session at a time');
          active.add(order);
          parallel = Math.max(parallel, active.size);
          await clock.advance(1);
          seen.set(order, [...(seen.get(order) ?? []), step]);
          await session?.setState({ lastStep: step });
          active.delete(order);
        },
        { concurrency: 3 },
      );
      await waitUntil(async () => (await orders.stats()).length === 0, 'all sessions drained');
      await consumer.close();
      for (const order of ['A', 'B', 'C']) assert.deepEqual(seen.get(order), [0, 1, 2, 3, 4]);
      assert.equal(parallel, 3);
      assert.deepEqual(await orders.getSessionState('B'), { lastStep: 4 });
      const { backend: used } = messaging;
      // Every message after a session's first came with the completion of the one before it.
      if (used instanceof ContinuingBackend) assert.equal(used.handedOver, 12);
    });
  }

  it('completes and receives in one call only a completion that would go out alone, outside sessions', async () => {
    class CountingCalls extends ContinuingBackend {
      continued = 0;
      completeCalls = 0;
      override completeAndReceive(queue: string, lockToken: string, request: ReceiveRequest) {
        this.continued++;
        return super.completeAndReceive(queue, lockToken, request);
      }
      override complete(queue: string, lockTokens: readonly string[], now: number) {
        this.completeCalls++;
        return super.complete(queue, lockTokens, now);
      }
    }
    async function run(concurrency: number) {
      const backend = new CountingCalls();
      const { messaging, queue } = await setup({}, backend);
      await queue.sendBatch(Array.from({ length: 60 }, (_, i) => ({ body: i })));
      const consumer = messaging.consume<number>('work', () => {}, { concurrency });
      await waitUntil(async () => (await queue.stats()).length === 0, 'the queue drained');
      await consumer.close();
      assert.equal(consumer.processed, 60);
      return backend;
    }
    // One at a time, nothing could share the round trip: each completion brings the next message.
    const alone = await run(1);
    assert.ok(alone.continued >= 59, `${alone.continued} completions received at concurrency 1`);
    // Twenty at once, completions share the group commit (one call for many) and the loop receives in bulk.
    const many = await run(20);
    assert.ok(many.continued <= 10, `${many.continued} of 60 completions received at concurrency 20`);
    assert.ok(many.completeCalls <= 20, `${many.completeCalls} complete calls for 60 messages`);
  });

  describe('session batches', () => {
    /** The memory backend, counting the calls that lock messages. */
    class CountingBackend extends ContinuingBackend {
      receives = 0;
      override async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
        this.receives++;
        return super.receive(queue, request);
      }
    }
    type Step = { order: string; step: number };
    async function sessions(
      orders: readonly string[],
      steps: number,
      backend = new CountingBackend(),
      queueOptions: QueueOptions = {},
    ) {
      const { messaging, clock, events } = await setup({}, backend);
      await messaging.createQueue('orders', { sessions: true, maxDeliveryCount: 5, ...queueOptions });
      const queue = messaging.queue<Step>('orders');
      const batch = [];
      for (let step = 0; step < steps; step++)
        for (const order of orders) batch.push({ body: { order, step }, sessionId: order });
      await queue.sendBatch(batch);
      return { messaging, clock, events, queue, backend };
    }

    it('runs a batch of a session in order in one slot, sessions in parallel, with fewer receives', async () => {
      async function run(sessionBatch: number) {
        const { messaging, queue, backend } = await sessions(['A', 'B'], 6);
        const seen = new Map<string, number[]>();
        const active = new Set<string>();
        let parallel = 0;
        const consumer = messaging.consume<Step>(
          'orders',
          async (message) => {
            const { order, step } = message.body;
            assert.ok(!active.has(order), 'one message of a session at a time');
            active.add(order);
            parallel = Math.max(parallel, active.size);
            await flushMicrotasks();
            seen.set(order, [...(seen.get(order) ?? []), step]);
            active.delete(order);
          },
          { concurrency: 2, sessionBatch },
        );
        await waitUntil(async () => (await queue.stats()).length === 0, 'all sessions drained');
        await consumer.close();
        for (const order of ['A', 'B']) assert.deepEqual(seen.get(order), [0, 1, 2, 3, 4, 5]);
        assert.equal(parallel, 2);
        assert.equal(consumer.processed, 12);
        return backend.receives;
      }
      const oneByOne = await run(1);
      const batched = await run(3);
      assert.ok(oneByOne >= 12, `${oneByOne} receives one by one: one per message at least`);
      assert.ok(batched * 2 <= oneByOne, `${batched} receives in batches of 3, ${oneByOne} one by one`);
    });

    it('gives the rest of a batch back with a failed message, then runs them again in order', async () => {
      const { messaging, queue } = await sessions(['A'], 4);
      const seen: [number, number][] = [];
      let failed = false;
      const consumer = messaging.consume<Step>(
        'orders',
        (message) => {
          seen.push([message.body.step, message.deliveryCount]);
          if (message.body.step === 1 && !failed) {
            failed = true;
            throw new Error('once');
          }
        },
        { sessionBatch: 4, retryBackoff: constantBackoff(0) },
      );
      await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
      await consumer.close();
      assert.deepEqual(seen, [
        [0, 1],
        [1, 1],
        [1, 2],
        [2, 2],
        [3, 2],
      ]);
    });

    it("moves on to the rest of a batch after a message is dead-lettered, with onSessionDeadLetter 'continue'", async () => {
      const { messaging, queue } = await sessions(['A'], 3, new CountingBackend(), {
        onSessionDeadLetter: 'continue',
      });
      const seen: number[] = [];
      const consumer = messaging.consume<Step>(
        'orders',
        async (message) => {
          seen.push(message.body.step);
          if (message.body.step === 0) await message.deadLetter('rejected');
        },
        { sessionBatch: 3 },
      );
      await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
      await consumer.close();
      assert.deepEqual(seen, [0, 1, 2]);
      assert.equal((await queue.stats()).deadLettered, 1);
    });

    it('leaves the rest of a batch waiting behind a dead letter that holds its session, until it is resent', async () => {
      const { messaging, queue } = await sessions(['A'], 3);
      const seen: number[] = [];
      let rejecting = true;
      const consumer = messaging.consume<Step>(
        'orders',
        async (message) => {
          seen.push(message.body.step);
          if (message.body.step === 0 && rejecting) await message.deadLetter('rejected');
        },
        { sessionBatch: 3 },
      );
      await waitUntil(async () => (await queue.stats()).deadLettered === 1, 'step 0 dead-lettered');
      const [dead] = await queue.listDeadLetters();
      assert.equal(dead?.holdsSession, true);
      const stats = await queue.stats();
      assert.deepEqual([stats.locked, stats.waiting], [0, 2], 'steps 1 and 2 went back to waiting');
      rejecting = false;
      await queue.resendDeadLetters([dead?.sequence as number]);
      await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
      await consumer.close();
      assert.deepEqual(seen, [0, 0, 1, 2]);
    });

    it('lets a handler do the work of the messages after its own: those it takes complete without running', async () => {
      const { messaging, queue } = await sessions(['A'], 5);
      const calls: [number, number[]][] = [];
      let refused: unknown;
      const consumer = messaging.consume<Step>(
        'orders',
        (message, context) => {
          const following = context.following.map((later) => (later.body as Step).step);
          calls.push([message.body.step, following]);
          if (message.body.step !== 0) return;
          try {
            context.take(following.length + 1);
          } catch (error) {
            refused = error;
          }
          context.take(1);
          context.take(1);
        },
        { sessionBatch: 5 },
      );
      await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
      await consumer.close();
      assert.deepEqual(calls, [
        [0, [1, 2, 3, 4]],
        [3, [4]],
        [4, []],
      ]);
      assert.ok(refused instanceof InvalidOptionsError, 'more than follow cannot be taken');
      assert.equal(consumer.processed, 5);
    });

    it('gives back what a handler took when it then fails, and runs them again in order', async () => {
      const { messaging, queue } = await sessions(['A'], 3);
      const seen: [number, number][] = [];
      const consumer = messaging.consume<Step>(
        'orders',
        (message, context) => {
          seen.push([message.body.step, message.deliveryCount]);
          if (message.deliveryCount === 1 && message.body.step === 0) {
            context.take(2);
            throw new Error('after taking');
          }
        },
        { sessionBatch: 3, retryBackoff: constantBackoff(0) },
      );
      await waitUntil(async () => (await queue.stats()).length === 0, 'the session drained');
      await consumer.close();
      assert.deepEqual(
        seen.map(([step]) => step),
        [0, 0, 1, 2],
      );
      assert.equal(seen[1]?.[1], 2, 'the failed message came back');
      assert.equal((await queue.stats()).deadLettered, 0);
    });

    it('gives an unfinished batch back at shutdown last first, so the session keeps its order', async () => {
      const { messaging, queue, clock, events } = await sessions(['A'], 3);
      const gated = gatedHandler();
      const consumer = messaging.consume<Step>(
        'orders',
        (message, context) => gated.handler({ body: message.body.step }, context),
        { sessionBatch: 3 },
      );
      await waitUntil(() => gated.started.length === 1, 'the first message started');
      const closing = consumer.close({ timeoutMs: 1000 });
      await clock.advance(1000);
      await closing;
      assert.ok(!events.some((e) => e.type === 'lock-lost'), 'every message was given back');
      const stopped = events.find((e) => e.type === 'consumer-stopped');
      assert.deepEqual(stopped?.type === 'consumer-stopped' && [stopped.drained, stopped.released], [0, 3]);
      const stats = await queue.stats();
      assert.deepEqual([stats.available, stats.waiting], [1, 2]);
      const again = await queue.receive({ max: 5 });
      assert.deepEqual(
        again.map((m) => m.body.step),
        [0],
      );
    });
  });

  describe('poison messages', () => {
    type Step = { order: string; step: number };
    for (const sessionBatch of [1, 3]) {
      it(`holds only the poisoned session, then runs it on in order once its dead letter is resent (sessionBatch ${sessionBatch})`, async () => {
        const { messaging, events } = await setup();
        await messaging.createQueue('orders', { sessions: true, maxDeliveryCount: 3 });
        const orders = messaging.queue<Step>('orders');
        const batch = [];
        for (let step = 0; step < 5; step++)
          for (const order of ['A', 'B', 'C']) batch.push({ body: { order, step }, sessionId: order });
        await orders.sendBatch(batch);
        const handled = new Map<string, number[]>();
        let poisoned = true;
        const consumer = messaging.consume<Step>(
          'orders',
          (message) => {
            const { order, step } = message.body;
            if (poisoned && order === 'A' && step === 2) throw new Error('cannot ship');
            handled.set(order, [...(handled.get(order) ?? []), step]);
          },
          { concurrency: 3, retryBackoff: constantBackoff(0), sessionBatch },
        );
        const settled = async () => {
          const stats = await orders.stats();
          return stats.deadLettered === 1 && stats.length === 2 && stats.locked === 0;
        };
        await waitUntil(settled, 'every message handled but the poisoned session');
        assert.deepEqual(handled.get('A'), [0, 1]);
        assert.deepEqual(handled.get('B'), [0, 1, 2, 3, 4]);
        assert.deepEqual(handled.get('C'), [0, 1, 2, 3, 4]);
        assert.equal((await orders.stats()).waiting, 2, "A's steps 3 and 4 wait");
        const alert = events.find((e) => e.type === 'message-dead-lettered');
        assert.ok(alert?.type === 'message-dead-lettered');
        const [dead] = await orders.listDeadLetters();
        assert.deepEqual(
          [
            alert.sessionId,
            alert.sequence,
            alert.reason,
            alert.description,
            alert.deliveryCount,
            alert.holdsSession,
          ],
          ['A', dead?.sequence, DEAD_LETTER_MAX_DELIVERIES, 'cannot ship', 3, true],
        );
        poisoned = false;
        await orders.resendDeadLetters([dead?.sequence as number]);
        await waitUntil(async () => (await orders.stats()).length === 0, 'the held session drained');
        await consumer.close();
        assert.deepEqual(handled.get('A'), [0, 1, 2, 3, 4]);
      });
    }

    it("with onPoison 'stop', dead-letters the message, stops, and rejects `stopped` with PoisonMessageError", async () => {
      const { messaging, queue, events } = await setup({ maxDeliveryCount: 2 });
      const sent = await queue.send(1);
      const consumer = messaging.consume<number>(
        'work',
        () => {
          throw new Error('cannot parse');
        },
        { onPoison: 'stop', retryBackoff: constantBackoff(0) },
      );
      // Nobody awaits `stopped` until the consumer stopped: its rejection must not go unhandled meanwhile.
      await waitUntil(() => events.some((e) => e.type === 'consumer-stopped'), 'the consumer stopped');
      await assert.rejects(consumer.stopped, (error) => {
        assert.ok(error instanceof PoisonMessageError);
        assert.equal(error.code, 'ERR_STRATUS_POISON_MESSAGE');
        assert.deepEqual(
          [error.queue, error.sequence, error.sessionId, error.deliveryCount],
          ['work', sent.sequence, undefined, 2],
        );
        assert.equal((error.cause as Error).message, 'cannot parse');
        return true;
      });
      const stoppedEvent = events.find((e) => e.type === 'consumer-stopped');
      assert.ok(
        stoppedEvent?.type === 'consumer-stopped' && stoppedEvent.error instanceof PoisonMessageError,
      );
      const [dead] = await queue.listDeadLetters();
      assert.deepEqual([dead?.sequence, dead?.deadLetterReason], [sent.sequence, DEAD_LETTER_MAX_DELIVERIES]);
      assert.equal(consumer.closing, true);
      await queue.send(2);
      await flushMicrotasks();
      assert.equal((await queue.stats()).available, 1, 'nothing consumes any more');
      await consumer.close();
    });

    it("keeps going with onPoison 'dead-letter' (the default)", async () => {
      const { messaging, queue } = await setup({ maxDeliveryCount: 1 });
      await queue.sendBatch([{ body: 1 }, { body: 2 }]);
      const seen: number[] = [];
      const consumer = messaging.consume<number>('work', (message) => {
        if (message.body === 1) throw new Error('poison');
        seen.push(message.body);
      });
      await waitUntil(async () => (await queue.stats()).length === 0, 'both settled');
      await consumer.close();
      assert.deepEqual(seen, [2]);
      assert.equal((await queue.stats()).deadLettered, 1);
    });
  });

  it('dead-letters an undecodable message at once without calling the handler', async () => {
    const { messaging, queue } = await setup();
    await messaging.backend.send(
      'work',
      [{ id: 'garbage', body: new Uint8Array([0xff, 0xfe]), contentType: 'application/json' }],
      T0,
    );
    await queue.send(5);
    const seen: number[] = [];
    const consumer = messaging.consume<number>('work', (message) => {
      seen.push(message.body);
    });
    await waitUntil(() => seen.length === 1, 'the good message was handled');
    await consumer.close();
    assert.deepEqual(seen, [5]);
    assert.equal((await queue.listDeadLetters())[0]?.id, 'garbage');
  });

  it('waits for a queue that does not exist yet instead of failing', async () => {
    const { messaging, clock, events } = await setup();
    const seen: number[] = [];
    const consumer = messaging.consume<number>('later', (message) => {
      seen.push(message.body);
    });
    await waitUntil(() => events.some((e) => e.type === 'receive-failed'), 'the first receive failed');
    const failure = events.find((e) => e.type === 'receive-failed');
    assert.ok(failure?.type === 'receive-failed' && failure.error instanceof UnknownQueueError);
    await messaging.createQueue('later');
    await messaging.queue<number>('later').send(9);
    for (let i = 0; i < 20 && seen.length === 0; i++) await clock.advance(1000);
    await waitUntil(() => seen.length === 1, 'the message was handled once the queue existed');
    await consumer.close();
    assert.deepEqual(seen, [9]);
  });

  it('lets the handler settle the message itself', async () => {
    const { messaging, queue } = await setup();
    await queue.sendBatch([{ body: 1 }, { body: 2 }]);
    const consumer = messaging.consume<number>('work', async (message) => {
      if (message.body === 1) await message.deadLetter('rejected', 'odd');
    });
    await waitUntil(async () => (await queue.stats()).length === 0, 'both settled');
    await consumer.close();
    const dead = await queue.listDeadLetters();
    assert.deepEqual(
      dead.map((d) => [d.id === undefined ? '' : d.deadLetterReason, d.deadLetterDescription]),
      [['rejected', 'odd']],
    );
  });
});
