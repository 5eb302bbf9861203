import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import {
  DeadlineScheduler,
  InvalidOptionsError,
  OperationCancelledError,
  remainingMs,
  systemClock,
} from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { TimeoutError } from './errors.js';
import type { ExecuteContext } from './policy.js';
import { type TimeoutEvent, type TimeoutStrategy, timeout } from './timeout.js';

/** An operation that honours its signal: rejects with the abort reason, else resolves with `value` after `ms`. */
function cooperativeWork<T>(clock: VirtualClock, ms: number, value: T) {
  return ({ signal }: ExecuteContext) =>
    new Promise<T>((resolve, reject) => {
      const timer = clock.setTimeout(() => resolve(value), ms);
      signal.addEventListener('abort', () => {
        clock.clearTimeout(timer);
        reject(signal.reason);
      });
    });
}

/** Settles a promise into a plain record, so a test can look at it at any virtual time. */
function track<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error) => Object.assign(state, { error, settled: true }),
  );
  return state;
}

const never = () => new Promise<never>(() => {});

describe('timeout: options', () => {
  it('rejects durations that are not positive and finite, and unknown strategies', () => {
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => timeout(timeoutMs), { name: 'InvalidOptionsError', option: 'timeoutMs' });
    }
    assert.throws(() => timeout({ timeoutMs: 10, strategy: 'polite' as TimeoutStrategy }), {
      name: 'InvalidOptionsError',
      option: 'strategy',
    });
    assert.throws(() => timeout(null as unknown as number), InvalidOptionsError);
  });

  it('takes a number as shorthand and defaults to cooperative', () => {
    const policy = timeout(250);
    assert.equal(policy.timeoutMs, 250);
    assert.equal(policy.strategy, 'cooperative');
    assert.equal(policy.name, 'timeout');
    assert.equal(timeout({ timeoutMs: 1, name: 'db' }).name, 'db');
  });
});

for (const strategy of ['cooperative', 'aggressive'] as const) {
  describe(`timeout: ${strategy}`, () => {
    it('returns the value and rethrows the error of an operation that finishes in time', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 100, strategy, clock });
      assert.equal(await policy.execute(() => 42), 42);
      const late = track(policy.execute(cooperativeWork(clock, 99, 'ok')));
      await clock.advance(99);
      assert.deepEqual(late, { value: 'ok', settled: true });
      const failure = new Error('boom');
      await assert.rejects(
        policy.execute(() => {
          throw failure;
        }),
        (error) => error === failure,
      );
    });

    it('rejects with TimeoutError exactly at the deadline, aborting the signal with it', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 100, strategy, clock });
      const events: TimeoutEvent[] = [];
      policy.events.on((event) => events.push(event));
      let signal: AbortSignal | undefined;
      const call = track(
        policy.execute((context) => {
          signal = context.signal;
          return cooperativeWork(clock, 1000, 'late')(context);
        }),
      );
      await clock.advance(99);
      assert.equal(call.settled, false);
      assert.equal(remainingMs(signal), 1);
      await clock.advance(1);
      assert.ok(call.error instanceof TimeoutError);
      assert.equal(call.error.timeoutMs, 100);
      assert.equal(signal?.aborted, true);
      assert.equal(signal?.reason, call.error);
      assert.equal(events.length, 1);
      assert.deepEqual(
        { ...events[0], at: undefined },
        { component: 'timeout', name: 'timeout', type: 'timeout', at: undefined, timeoutMs: 100, strategy },
      );
      assert.equal(clock.pendingTimers, 0);
    });

    it('lets the caller cancel: OperationCancelledError, not TimeoutError', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 100, strategy, clock });
      const caller = new AbortController();
      const call = track(policy.execute(cooperativeWork(clock, 1000, 'x'), { signal: caller.signal }));
      await clock.advance(10);
      caller.abort('user left');
      await flushMicrotasks();
      assert.ok(call.error instanceof OperationCancelledError);
      assert.equal(call.error.reason, 'user left');
      assert.equal(getEventListeners(caller.signal, 'abort').length, 0);
      await assert.rejects(policy.execute(never, { signal: caller.signal }), OperationCancelledError);
    });

    it('a signal first read after the call finished adds no listener to the caller signal', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 100, strategy, clock });
      const caller = new AbortController();
      let kept: ExecuteContext | undefined;
      const value = await policy.execute(
        (context) => {
          kept = context;
          return 1;
        },
        { signal: caller.signal },
      );
      assert.equal(value, 1);
      assert.equal(kept?.signal.aborted, false);
      assert.equal(getEventListeners(caller.signal, 'abort').length, 0);
    });

    it('leaves no deadline, timer or listener behind after 10,000 calls', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 1000, strategy, clock });
      const caller = new AbortController();
      for (let i = 0; i < 10_000; i++) {
        const options = i % 2 === 0 ? { signal: caller.signal } : undefined;
        const operation = i % 3 === 0 ? ({ signal }: ExecuteContext) => (signal.aborted ? 0 : i) : () => i;
        assert.equal(await policy.execute(operation, options), i);
      }
      assert.equal(DeadlineScheduler.for(clock).size, 0);
      assert.equal(getEventListeners(caller.signal, 'abort').length, 0);
      assert.ok(clock.pendingTimers <= 1, 'at most the shared timer, which finds nothing to do');
      await clock.advance(1000);
      assert.equal(clock.pendingTimers, 0);
    });

    it('keeps no Node timer handle alive after 10,000 calls on the system clock', async () => {
      const timeouts = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
      const policy = timeout({ timeoutMs: 60_000, strategy });
      const baseline = timeouts();
      for (let i = 0; i < 10_000; i++) {
        await policy.execute(
          i % 2 === 0 ? () => i : ({ signal }: ExecuteContext) => (signal.aborted ? -1 : i),
        );
      }
      assert.equal(DeadlineScheduler.for(systemClock).size, 0);
      assert.equal(timeouts(), baseline);
    });

    it('serves concurrent calls independently', async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 50, strategy, clock });
      const calls = Array.from({ length: 100 }, (_, i) =>
        track(policy.execute(cooperativeWork(clock, i, i))),
      );
      await clock.advance(100);
      calls.forEach((call, i) => {
        if (i < 50) assert.deepEqual(call, { value: i, settled: true });
        else assert.ok(call.error instanceof TimeoutError, `call ${i}`);
      });
    });
  });
}

describe('timeout: what each strategy does after the deadline', () => {
  it('cooperative waits for the operation: a late rejection becomes TimeoutError, a late value is returned', async () => {
    const clock = new VirtualClock();
    const policy = timeout({ timeoutMs: 100, clock });
    const rejecting = track(
      policy.execute(
        () =>
          new Promise((_, reject) => {
            clock.setTimeout(() => reject(new Error('socket closed')), 150);
          }),
      ),
    );
    const resolving = track(
      policy.execute(() => new Promise((resolve) => clock.setTimeout(() => resolve('done anyway'), 150))),
    );
    await clock.advance(100);
    assert.equal(rejecting.settled, false, 'cooperative does not abandon the operation');
    await clock.advance(50);
    assert.ok(rejecting.error instanceof TimeoutError);
    assert.deepEqual(resolving, { value: 'done anyway', settled: true });
  });

  it('aggressive abandons an operation that ignores its signal, and ignores its late outcome', async () => {
    const clock = new VirtualClock();
    const policy = timeout({ timeoutMs: 100, strategy: 'aggressive', clock });
    let context: ExecuteContext | undefined;
    const call = track(
      policy.execute((c) => {
        context = c;
        return new Promise((_, reject) => clock.setTimeout(() => reject(new Error('late')), 500));
      }),
    );
    await clock.advance(100);
    assert.ok(call.error instanceof TimeoutError);
    assert.equal(context?.signal.aborted, true, 'a signal first read after the deadline is already aborted');
    await clock.advance(400); // the late rejection must not surface as an unhandled rejection
    assert.ok(call.error instanceof TimeoutError);
  });

  it('aggressive rejects at once when the caller cancels, even if the operation ignores its signal', async () => {
    const clock = new VirtualClock();
    const policy = timeout({ timeoutMs: 100, strategy: 'aggressive', clock });
    const caller = new AbortController();
    const call = track(policy.execute(never, { signal: caller.signal }));
    caller.abort();
    await flushMicrotasks();
    assert.ok(call.error instanceof OperationCancelledError);
    assert.equal(DeadlineScheduler.for(clock).size, 0);
  });
});

/** An outer timeout around an inner one around 1 s of cooperative work; `seen` is the time the work was given. */
function nested(clock: VirtualClock, outerMs: number, innerMs: number) {
  const outer = timeout({ timeoutMs: outerMs, clock });
  const inner = timeout({ timeoutMs: innerMs, clock });
  let seen: number | undefined;
  const call = track(
    outer.execute(({ signal }) =>
      inner.execute(
        (context) => {
          seen = remainingMs(context.signal);
          return cooperativeWork(clock, 1000, 'x')(context);
        },
        { signal },
      ),
    ),
  );
  return { call, seen: () => seen };
}

describe('timeout: nested deadlines take the earliest', () => {
  it('an inner timeout fails at the outer deadline and sees it as its remaining time', async () => {
    const clock = new VirtualClock();
    const { call, seen } = nested(clock, 100, 500);
    await clock.advance(100);
    assert.equal(seen(), 100, 'the inner 500 ms does not extend the outer 100 ms');
    assert.ok(call.error instanceof TimeoutError);
    assert.equal(call.error.timeoutMs, 100);
  });

  it('a shorter inner timeout fires first and the outer passes its error on', async () => {
    const clock = new VirtualClock();
    const { call, seen } = nested(clock, 500, 100);
    await clock.advance(100);
    assert.equal(seen(), 100);
    assert.ok(call.error instanceof TimeoutError);
    assert.equal(call.error.timeoutMs, 100);
  });

  for (const outerStrategy of ['cooperative', 'aggressive'] as const) {
    it(`an aggressive inner timeout inside a ${outerStrategy} outer one ends at the outer deadline even if the operation ignores its signal`, async () => {
      const clock = new VirtualClock();
      const outer = timeout({ timeoutMs: 100, strategy: outerStrategy, clock });
      const inner = timeout({ timeoutMs: 500, strategy: 'aggressive', clock });
      const call = track(outer.execute(({ signal }) => inner.execute(never, { signal })));
      await clock.advance(99);
      assert.equal(call.settled, false);
      await clock.advance(1);
      assert.ok(call.error instanceof TimeoutError);
      assert.equal(call.error.timeoutMs, 100);
      assert.equal(DeadlineScheduler.for(clock).size, 0);
      await clock.advance(1000);
      assert.equal(clock.pendingTimers, 0);
    });
  }

  it('the remaining time is visible across an intermediate signal', async () => {
    const clock = new VirtualClock();
    const outer = timeout({ timeoutMs: 300, clock });
    const seen: number[] = [];
    await outer.execute(async ({ signal }) => {
      seen.push(remainingMs(signal));
      await clock.advance(120);
      seen.push(remainingMs(signal));
    });
    assert.deepEqual(seen, [300, 180]);
  });

  it('nested policies handed the context itself see the deadline and cancellation without creating any signal', async () => {
    const clock = new VirtualClock();
    const outer = timeout({ timeoutMs: 100, clock });
    const inner = timeout({ timeoutMs: 500, clock });
    const Original = globalThis.AbortController;
    let created = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        created++;
      }
    };
    try {
      const seen: number[] = [];
      for (let i = 0; i < 100; i++) {
        await outer.execute((context) =>
          inner.execute((innerContext) => seen.push(remainingMs(innerContext)), context),
        );
      }
      assert.equal(created, 0);
      assert.deepEqual(new Set(seen), new Set([100]));
      const late = track(
        outer.execute((context) =>
          inner.execute(async (innerContext) => {
            await new Promise<void>((resolve) => clock.setTimeout(resolve, 150));
            return [remainingMs(innerContext), innerContext.signal.aborted];
          }, context),
        ),
      );
      await clock.advance(150);
      assert.deepEqual(
        late.value,
        [0, true],
        'a signal first read after the outer deadline is already aborted',
      );
    } finally {
      globalThis.AbortController = Original;
    }
  });
});

describe('timeout: events and async context', () => {
  for (const strategy of ['cooperative', 'aggressive'] as const) {
    it(`${strategy}: each timeout event is reported in the async context of its own call`, async () => {
      const clock = new VirtualClock();
      const policy = timeout({ timeoutMs: 100, strategy, clock });
      const callContext = new AsyncLocalStorage<string>();
      const seen: (string | undefined)[] = [];
      policy.events.on(() => seen.push(callContext.getStore()));
      // Both deadlines share one timer, armed by the first call: its context must not leak into the second's event.
      const stall = (ctx: ExecuteContext) =>
        new Promise<never>((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      const calls = ['a', 'b'].map((name) =>
        callContext.run(name, () => policy.execute(stall).catch((error: unknown) => error)),
      );
      await clock.advance(100);
      const errors = await Promise.all(calls);
      assert.ok(errors.every((error) => error instanceof TimeoutError));
      assert.deepEqual(seen.sort(), ['a', 'b']);
    });
  }
});
