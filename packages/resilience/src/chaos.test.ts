import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError, OperationCancelledError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { type ChaosEvent, chaosFault, chaosLatency, chaosOutcome } from './chaos.js';
import type { ExecuteContext } from './policy.js';

/** A random source that replays `values` and counts how often it was asked. */
function replay(...values: number[]) {
  const source = () => {
    source.calls++;
    const value = values.shift();
    if (value === undefined) throw new Error('random source exhausted');
    return value;
  };
  source.calls = 0;
  return source;
}

describe('chaos', () => {
  it('validates its options', () => {
    const fault = new Error('chaos');
    const cases: [() => unknown, string][] = [
      [() => chaosFault({ injectionRate: -0.1, fault }), 'injectionRate'],
      [() => chaosFault({ injectionRate: 1.5, fault }), 'injectionRate'],
      [() => chaosFault({ injectionRate: 0.5, fault: 'oops' as never }), 'fault'],
      [() => chaosFault({ injectionRate: 0.5, fault, enabled: 'yes' as never }), 'enabled'],
      [() => chaosFault({ injectionRate: 0.5, fault, random: 0.3 as never }), 'random'],
      [() => chaosLatency({ injectionRate: 0.5, latencyMs: -10 }), 'latencyMs'],
      [() => chaosOutcome({ injectionRate: 0.5 } as never), 'outcome'],
    ];
    for (const [make, option] of cases) {
      assert.throws(
        make,
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        option,
      );
    }
  });

  it('at rate 0 never injects and never draws a random number', async () => {
    const random = replay();
    const policy = chaosFault({ injectionRate: 0, fault: new Error('chaos'), random });
    for (let i = 0; i < 100; i++) assert.equal(await policy.execute(() => i), i);
    assert.equal(random.calls, 0);
  });

  it('at rate 1 fails every call without running the operation', async () => {
    const fault = new Error('injected');
    const policy = chaosFault({ injectionRate: 1, fault });
    let ran = 0;
    for (let i = 0; i < 10; i++) {
      await assert.rejects(
        policy.execute(() => {
          ran++;
        }),
        (error) => error === fault,
      );
    }
    assert.equal(ran, 0);
  });

  it('injects exactly when the random draw falls below the rate', async () => {
    const policy = chaosFault({
      injectionRate: 0.3,
      fault: ({ attempt }) => new Error(`fault for attempt ${attempt}`),
      random: replay(0.1, 0.3, 0.29999, 0.9),
    });
    const outcomes = [];
    for (let i = 0; i < 4; i++) {
      outcomes.push(await policy.execute(() => 'ok').catch((error: Error) => error.message));
    }
    assert.deepEqual(outcomes, ['fault for attempt 1', 'ok', 'fault for attempt 1', 'ok']);
  });

  it('reads a function `enabled` on every call, so chaos can be switched at run time', async () => {
    let on = false;
    const random = replay(0, 0);
    const policy = chaosOutcome({ injectionRate: 1, outcome: 'fake', enabled: () => on, random });
    assert.equal(await policy.execute(() => 'real'), 'real');
    on = true;
    assert.equal(await policy.execute(() => 'real'), 'fake');
    on = false;
    assert.equal(await policy.execute(() => 'real'), 'real');
    assert.equal(random.calls, 1, 'no draw while disabled');
    const off = chaosOutcome({ injectionRate: 1, outcome: 'fake', enabled: false });
    assert.equal(await off.execute(() => 'real'), 'real');
  });

  it('passes results, errors and the caller signal through when it does not inject', async () => {
    const policy = chaosFault({ injectionRate: 0.5, fault: new Error('chaos'), random: () => 0.99 });
    const controller = new AbortController();
    let seen: ExecuteContext | undefined;
    await policy.execute(
      (context) => {
        seen = context;
      },
      { signal: controller.signal },
    );
    assert.equal(seen?.signal, controller.signal);
    const boom = new Error('real failure');
    await assert.rejects(
      policy.execute(() => {
        throw boom;
      }),
      (error) => error === boom,
    );
  });

  it('replaces the outcome with a value or a computed one', async () => {
    const fixed = chaosOutcome({ injectionRate: 1, outcome: { status: 503 } });
    assert.deepEqual(await fixed.execute(() => ({ status: 200 })), { status: 503 });
    let made = 0;
    const computed = chaosOutcome({ injectionRate: 1, outcome: () => ({ status: 500 + ++made }) });
    assert.deepEqual(await computed.execute(() => ({ status: 200 })), { status: 501 });
    assert.deepEqual(await computed.execute(() => ({ status: 200 })), { status: 502 });
  });

  it('delays the call on the clock before running it', async () => {
    const clock = new VirtualClock();
    const policy = chaosLatency({ injectionRate: 1, latencyMs: 200, clock });
    let startedAt: number | undefined;
    const call = policy.execute(() => {
      startedAt = clock.monotonic();
      return 'late';
    });
    await clock.advance(199);
    assert.equal(startedAt, undefined);
    await clock.advance(1);
    assert.equal(await call, 'late');
    assert.equal(startedAt, 200);
  });

  it('cuts injected latency short when the caller aborts, without running the operation', async () => {
    const clock = new VirtualClock();
    const policy = chaosLatency({ injectionRate: 1, latencyMs: ({ attempt }) => attempt * 1000, clock });
    const controller = new AbortController();
    let ran = false;
    const call = policy.execute(
      () => {
        ran = true;
      },
      { signal: controller.signal },
    );
    await clock.advance(300);
    controller.abort('enough');
    await assert.rejects(
      call,
      (error) => error instanceof OperationCancelledError && error.reason === 'enough',
    );
    assert.equal(ran, false);
    assert.equal(clock.pendingTimers, 0);
  });

  it('rejects a caller whose signal is already aborted, injecting nothing and running nothing', async () => {
    const controller = new AbortController();
    controller.abort('gone');
    const policies = [
      chaosFault({ injectionRate: 1, fault: new Error('chaos') }),
      chaosOutcome({ injectionRate: 1, outcome: 'injected' }),
      chaosFault({ injectionRate: 0, fault: new Error('chaos') }),
    ];
    for (const policy of policies) {
      let ran = false;
      const injected: ChaosEvent[] = [];
      const off = policy.events.on((event) => injected.push(event));
      await assert.rejects(
        policy.execute(
          () => {
            ran = true;
          },
          { signal: controller.signal },
        ),
        (error) => error instanceof OperationCancelledError && error.reason === 'gone',
      );
      off();
      assert.equal(ran, false);
      assert.deepEqual(injected, []);
    }
  });

  it('emits `injected` with its kind, only for injected calls', async () => {
    const clock = new VirtualClock();
    const events: ChaosEvent[] = [];
    const random = replay(0.1, 0.9, 0.1, 0.1);
    const policies = [
      chaosFault({ injectionRate: 0.5, fault: new Error('x'), random, clock, name: 'f' }),
      chaosLatency({ injectionRate: 0.5, latencyMs: 5, random, clock, name: 'l' }),
      chaosOutcome({ injectionRate: 0.5, outcome: 7, random, clock }),
    ];
    for (const policy of policies) policy.events.on((e) => events.push(e));
    const settled = Promise.allSettled([
      policies[0]!.execute(() => 1),
      policies[1]!.execute(() => 1),
      policies[1]!.execute(() => 1),
      policies[2]!.execute(() => 1),
    ]);
    await clock.runAll();
    assert.deepEqual(
      (await settled).map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(
      events.map(({ name, type, kind, latencyMs, component }) => ({
        name,
        type,
        kind,
        latencyMs,
        component,
      })),
      [
        { name: 'f', type: 'injected', kind: 'fault', latencyMs: undefined, component: 'chaos' },
        { name: 'l', type: 'injected', kind: 'latency', latencyMs: 5, component: 'chaos' },
        {
          name: 'chaos-outcome',
          type: 'injected',
          kind: 'outcome',
          latencyMs: undefined,
          component: 'chaos',
        },
      ],
    );
  });
});
