import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlineScheduler, InvalidOptionsError, OperationCancelledError, sleep } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { type HedgingEvent, type HedgingOptions, hedging } from './hedging.js';
import type { ExecuteContext } from './policy.js';

interface Step {
  /** How long the attempt runs. */
  ms: number;
  /** Throw this instead of returning. */
  error?: Error;
  /** Return this (default: `attempt-N`). */
  value?: unknown;
}

/**
 * An operation whose attempt N follows script[N - 1] on the virtual clock and honours its signal. It
 * records the signal each attempt got.
 */
function scripted(clock: VirtualClock, script: Step[]) {
  const signals: AbortSignal[] = [];
  const operation = async ({ signal, attempt }: ExecuteContext) => {
    signals.push(signal);
    const step = script[attempt - 1];
    if (step === undefined) throw new Error(`no step for attempt ${attempt}`);
    await sleep(clock, step.ms, signal);
    if (step.error) throw step.error;
    return step.value ?? `attempt-${attempt}`;
  };
  return { operation, signals };
}

function recordEvents(policy: { events: { on(l: (e: HedgingEvent) => void): unknown } }) {
  const events: string[] = [];
  policy.events.on((e) =>
    events.push(
      e.type === 'hedge'
        ? `hedge ${e.attempt} at ${e.afterMs} (${e.reason})`
        : `winner ${e.attempt} at ${e.afterMs}`,
    ),
  );
  return events;
}

async function settle<T>(clock: VirtualClock, promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return (await settleTimed(clock, promise)).result;
}

/** Runs the clock until nothing is left and says how the call settled, and at what time. */
async function settleTimed<T>(clock: VirtualClock, promise: Promise<T>) {
  let at = Number.NaN;
  const settled = Promise.allSettled([promise]).then(([result]) => {
    at = clock.monotonic();
    return result as PromiseSettledResult<T>;
  });
  await clock.runAll();
  return { result: await settled, at };
}

/** No hedge deadline is left pending on the clock's shared scheduler. */
function noDeadlinesLeft(clock: VirtualClock): boolean {
  return DeadlineScheduler.for(clock).size === 0;
}

describe('hedging', () => {
  it('validates its options', () => {
    const bad: [Partial<HedgingOptions>, string][] = [
      [{ maxHedgedAttempts: 0, delayMs: 10 }, 'maxHedgedAttempts'],
      [{ maxHedgedAttempts: 1.5, delayMs: 10 }, 'maxHedgedAttempts'],
      [{ maxHedgedAttempts: 1, delayMs: -1 }, 'delayMs'],
      [{ maxHedgedAttempts: 1, delayMs: 10, delay: { percentile: 0.9, fallbackMs: 10 } }, 'delay'],
      [{ maxHedgedAttempts: 1, delay: { percentile: 0, fallbackMs: 10 } }, 'delay.percentile'],
      [{ maxHedgedAttempts: 1, delay: { percentile: 1.2, fallbackMs: 10 } }, 'delay.percentile'],
      [{ maxHedgedAttempts: 1, delay: { percentile: 0.9, fallbackMs: -3 } }, 'delay.fallbackMs'],
      [
        { maxHedgedAttempts: 1, delay: { percentile: 0.9, fallbackMs: 5, windowSize: 0 } },
        'delay.windowSize',
      ],
      [
        { maxHedgedAttempts: 1, delay: { percentile: 0.9, fallbackMs: 5, windowSize: 10, minSamples: 11 } },
        'delay.minSamples',
      ],
      [{ maxHedgedAttempts: 1, hedgeOnFailure: false }, 'delayMs'],
      [{ maxHedgedAttempts: 1, delayMs: 5, handle: { error: 'yes' as never } }, 'handle.error'],
    ];
    for (const [options, option] of bad) {
      assert.throws(
        () => hedging(options as HedgingOptions),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        JSON.stringify(options),
      );
    }
    assert.equal(hedging({ maxHedgedAttempts: 1 }).hedgeDelayMs, undefined, 'fallback mode needs no delay');
  });

  it('a fast first attempt wins alone and leaves no timer behind', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 100, clock });
    const events = recordEvents(policy);
    const { operation, signals } = scripted(clock, [{ ms: 40 }]);
    const result = await settle(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'fulfilled', value: 'attempt-1' });
    assert.equal(signals.length, 1);
    assert.equal(signals[0]?.aborted, false);
    assert.ok(noDeadlinesLeft(clock));
    assert.deepEqual(events, ['winner 1 at 40']);
  });

  it('launches a hedge after each fixed delay; the first success wins and the losers are aborted', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 100, clock, name: 'replicas' });
    const events = recordEvents(policy);
    const { operation, signals } = scripted(clock, [{ ms: 500 }, { ms: 150 }, { ms: 300 }]);
    const { result, at } = await settleTimed(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'fulfilled', value: 'attempt-2' });
    assert.deepEqual(events, ['hedge 2 at 100 (delay)', 'hedge 3 at 200 (delay)', 'winner 2 at 250']);
    assert.deepEqual(
      signals.map((s) => s.aborted),
      [true, false, true],
    );
    const reason = signals[0]?.reason as DOMException;
    assert.equal(reason.name, 'AbortError');
    assert.match(reason.message, /attempt 2/);
    assert.equal(at, 250);
  });

  it('each attempt has its own signal, linked to the caller', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 1, delayMs: 10, clock });
    const controller = new AbortController();
    const { operation, signals } = scripted(clock, [{ ms: 100 }, { ms: 100 }]);
    const call = policy.execute(operation, { signal: controller.signal });
    await clock.advance(20);
    assert.equal(signals.length, 2);
    assert.notEqual(signals[0], signals[1]);
    assert.notEqual(signals[0], controller.signal);
    controller.abort('user left');
    const error = await call.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof OperationCancelledError);
    assert.equal(error.reason, 'user left');
    assert.deepEqual(
      signals.map((s) => s.reason),
      ['user left', 'user left'],
    );
    assert.ok(noDeadlinesLeft(clock));
  });

  it('does not start at all when the caller signal is already aborted', async () => {
    const policy = hedging({ maxHedgedAttempts: 1, delayMs: 10 });
    let calls = 0;
    await assert.rejects(
      policy.execute(
        () => {
          calls++;
        },
        { signal: AbortSignal.abort() },
      ),
      OperationCancelledError,
    );
    assert.equal(calls, 0);
  });

  it('hedges at once when an attempt fails, then keeps the delay for the next one', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 100, clock });
    const events = recordEvents(policy);
    const { operation } = scripted(clock, [{ ms: 10, error: new Error('e1') }, { ms: 500 }, { ms: 30 }]);
    const result = await settle(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'fulfilled', value: 'attempt-3' });
    assert.deepEqual(events, ['hedge 2 at 10 (failure)', 'hedge 3 at 110 (delay)', 'winner 3 at 140']);
  });

  it('without a delay runs attempts one after another (fallback mode) and throws the last error', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, clock });
    const events = recordEvents(policy);
    const errors = [new Error('e1'), new Error('e2'), new Error('e3')];
    const { operation, signals } = scripted(
      clock,
      errors.map((error) => ({ ms: 10, error })),
    );
    const result = await settle(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'rejected', reason: errors[2] });
    assert.equal(signals.length, 3);
    assert.deepEqual(events, ['hedge 2 at 10 (failure)', 'hedge 3 at 20 (failure)']);
  });

  it('when every parallel attempt fails, throws the error of the last one to fail', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 10, hedgeOnFailure: false, clock });
    const errors = [new Error('e1'), new Error('e2'), new Error('e3')];
    const { operation } = scripted(clock, [
      { ms: 100, error: errors[0] },
      { ms: 200, error: errors[1] },
      { ms: 50, error: errors[2] },
    ]);
    const { result, at } = await settleTimed(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'rejected', reason: errors[1] });
    assert.equal(at, 210);
  });

  it('with hedgeOnFailure false, a failure with nothing else in flight ends the call at once', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 2, delayMs: 100, hedgeOnFailure: false, clock });
    const failure = new Error('down');
    const { operation, signals } = scripted(clock, [{ ms: 30, error: failure }]);
    const { result, at } = await settleTimed(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'rejected', reason: failure });
    assert.equal(signals.length, 1);
    assert.equal(at, 30);
  });

  it('an error the classifier does not handle ends the call at once and aborts the others', async () => {
    const clock = new VirtualClock();
    class Fatal extends Error {}
    const fatal = new Fatal('bad request');
    const policy = hedging({
      maxHedgedAttempts: 2,
      delayMs: 10,
      clock,
      handle: { error: (e) => !(e instanceof Fatal) },
    });
    const { operation, signals } = scripted(clock, [{ ms: 100 }, { ms: 25, error: fatal }, { ms: 100 }]);
    const { result, at } = await settleTimed(clock, policy.execute(operation));
    assert.deepEqual(result, { status: 'rejected', reason: fatal });
    assert.deepEqual(
      signals.map((s) => s.aborted),
      [true, false, true],
    );
    assert.equal(at, 35);
  });

  it('results the classifier calls failures trigger hedges; if all fail the last result is returned', async () => {
    const clock = new VirtualClock();
    const policy = hedging({
      maxHedgedAttempts: 1,
      delayMs: 1000,
      clock,
      handle: { result: (value) => (value as { status: number }).status >= 500 },
    });
    const events = recordEvents(policy);
    const ok = scripted(clock, [
      { ms: 5, value: { status: 503 } },
      { ms: 5, value: { status: 200 } },
    ]);
    assert.deepEqual(await settle(clock, policy.execute(ok.operation)), {
      status: 'fulfilled',
      value: { status: 200 },
    });
    assert.deepEqual(events, ['hedge 2 at 5 (failure)', 'winner 2 at 10']);
    const bad = scripted(clock, [
      { ms: 5, value: { status: 503 } },
      { ms: 5, value: { status: 502 } },
    ]);
    assert.deepEqual(await settle(clock, policy.execute(bad.operation)), {
      status: 'fulfilled',
      value: { status: 502 },
    });
  });

  it('a classifier that throws ends the call with its error instead of leaving it unsettled', async () => {
    const broken = new Error('classifier bug');
    const classify = () => {
      throw broken;
    };
    const cases: [HedgingOptions['handle'], Step][] = [
      [{ result: classify }, { ms: 5 }],
      [{ error: classify }, { ms: 5, error: new Error('first') }],
    ];
    for (const [handle, first] of cases) {
      const clock = new VirtualClock();
      const policy = hedging({ maxHedgedAttempts: 1, delayMs: 10, clock, handle });
      const { operation, signals } = scripted(clock, [first, { ms: 100 }]);
      const { result, at } = await settleTimed(clock, policy.execute(operation));
      assert.deepEqual(result, { status: 'rejected', reason: broken });
      assert.equal(at, 5);
      assert.equal(signals.length, 1);
      assert.ok(noDeadlinesLeft(clock));
    }
  });

  it('counts a synchronous throw as a failed attempt', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 1, delayMs: 50, clock });
    const result = await settle(
      clock,
      policy.execute(({ attempt }) => {
        if (attempt === 1) throw new Error('sync');
        return 'second';
      }),
    );
    assert.deepEqual(result, { status: 'fulfilled', value: 'second' });
    assert.ok(noDeadlinesLeft(clock));
  });

  it('a loser that reads its signal only after the call settled sees it aborted', async () => {
    const clock = new VirtualClock();
    const policy = hedging({ maxHedgedAttempts: 1, delayMs: 10, clock });
    let late: AbortSignal | undefined;
    const result = await settle(
      clock,
      policy.execute(async (context) => {
        if (context.attempt === 2) return 'fast';
        await sleep(clock, 100);
        late = context.signal;
        return 'slow';
      }),
    );
    assert.deepEqual(result, { status: 'fulfilled', value: 'fast' });
    assert.equal(late?.aborted, true);
  });

  it('hedges at the observed latency percentile once it has enough samples', async () => {
    const clock = new VirtualClock();
    const policy = hedging({
      maxHedgedAttempts: 1,
      delay: { percentile: 0.9, minSamples: 10, fallbackMs: 500, windowSize: 10 },
      clock,
    });
    const events = recordEvents(policy);
    assert.equal(policy.hedgeDelayMs, 500);
    // Ten calls lasting 10, 20, ... 100 ms: p90 by nearest rank is 90 ms.
    for (let i = 1; i <= 10; i++) {
      const { operation } = scripted(clock, [{ ms: i * 10 }]);
      await settle(clock, policy.execute(operation));
      assert.equal(policy.hedgeDelayMs, i < 10 ? 500 : 90);
    }
    assert.ok(
      events.every((e) => e.startsWith('winner 1')),
      'no hedge below the fallback delay',
    );
    events.length = 0;
    const { operation } = scripted(clock, [{ ms: 1000 }, { ms: 5 }]);
    assert.deepEqual(await settle(clock, policy.execute(operation)), {
      status: 'fulfilled',
      value: 'attempt-2',
    });
    assert.deepEqual(events, ['hedge 2 at 90 (delay)', 'winner 2 at 95']);
  });

  it('samples the duration of each successful attempt, not of failed ones', async () => {
    const clock = new VirtualClock();
    const policy = hedging({
      maxHedgedAttempts: 1,
      delay: { percentile: 1, minSamples: 1, fallbackMs: 70, windowSize: 8 },
      clock,
    });
    const failing = scripted(clock, [
      { ms: 1, error: new Error('x') },
      { ms: 1, error: new Error('y') },
    ]);
    await settle(clock, policy.execute(failing.operation));
    assert.equal(policy.hedgeDelayMs, 70);
    const ok = scripted(clock, [{ ms: 33 }]);
    await settle(clock, policy.execute(ok.operation));
    assert.equal(policy.hedgeDelayMs, 33);
    // A hedge that wins after a failed first attempt counts from its own start: 40, not 41.
    const second = scripted(clock, [{ ms: 1, error: new Error('z') }, { ms: 40 }]);
    await settle(clock, policy.execute(second.operation));
    assert.equal(policy.hedgeDelayMs, 40);
  });
});
