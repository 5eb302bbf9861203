import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { systemClock } from './clock.js';
import {
  cancelReasonOf,
  type Deadline,
  DeadlineScheduler,
  isCancelled,
  LazySignalSource,
  remainingMs,
  setSignalDeadline,
} from './deadline.js';

/** A deadline that records the monotonic time at which it expired. */
class Probe implements Deadline {
  deadlineBucket: Deadline['deadlineBucket'] = undefined;
  deadlineIndex = 0;
  firedAt: number | undefined;
  constructor(
    readonly clock: { monotonic(): number },
    readonly onExpire?: () => void,
  ) {}
  expire(): void {
    this.firedAt = this.clock.monotonic();
    this.onExpire?.();
  }
}

function setup() {
  const clock = new VirtualClock();
  return { clock, scheduler: DeadlineScheduler.for(clock) };
}

function timeoutHandles(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

describe('DeadlineScheduler on a virtual clock', () => {
  it('is shared per clock', () => {
    const { clock, scheduler } = setup();
    assert.equal(DeadlineScheduler.for(clock), scheduler);
    assert.notEqual(DeadlineScheduler.for(new VirtualClock()), scheduler);
  });

  it('fires each deadline exactly at its millisecond, never early (fractions round up)', async () => {
    const { clock, scheduler } = setup();
    const probes = [30, 10, 20, 10.2, 5].map((at) => {
      const probe = new Probe(clock);
      scheduler.add(probe, at);
      return probe;
    });
    assert.equal(scheduler.size, 5);
    assert.equal(clock.pendingTimers, 1, 'one real timer for all deadlines');
    await clock.advance(9);
    assert.deepEqual(
      probes.map((p) => p.firedAt),
      [undefined, undefined, undefined, undefined, 5],
    );
    await clock.advance(100);
    assert.deepEqual(
      probes.map((p) => p.firedAt),
      [30, 10, 20, 11, 5],
    );
    assert.equal(scheduler.size, 0);
    assert.equal(clock.pendingTimers, 0);
  });

  it('re-arms its timer for a deadline earlier than the armed one', async () => {
    const { clock, scheduler } = setup();
    const late = new Probe(clock);
    const early = new Probe(clock);
    scheduler.add(late, 1000);
    scheduler.add(early, 10);
    assert.equal(clock.pendingTimers, 1);
    assert.equal(clock.nextDue, 10);
    await clock.advance(10);
    assert.equal(early.firedAt, 10);
    assert.equal(clock.nextDue, 1000);
    await clock.runAll();
    assert.equal(late.firedAt, 1000);
  });

  it('removed deadlines never fire; swap-remove keeps the others intact', async () => {
    const { clock, scheduler } = setup();
    const probes = Array.from({ length: 1000 }, (_, i) => {
      const probe = new Probe(clock);
      scheduler.add(probe, 50 + (i % 7));
      return probe;
    });
    for (let i = 0; i < probes.length; i += 3) scheduler.remove(probes[i]!);
    scheduler.remove(probes[0]!); // removing twice is a no-op
    assert.equal(scheduler.size, 1000 - 334);
    await clock.runAll();
    probes.forEach((probe, i) => {
      if (i % 3 === 0) assert.equal(probe.firedAt, undefined, `probe ${i} was removed`);
      else assert.equal(probe.firedAt, 50 + (i % 7), `probe ${i}`);
    });
    assert.equal(scheduler.size, 0);
  });

  it('after all deadlines are removed, its single timer fires once more and then nothing is pending', async () => {
    const { clock, scheduler } = setup();
    for (let i = 0; i < 10_000; i++) {
      const probe = new Probe(clock);
      scheduler.add(probe, clock.monotonic() + 1000);
      scheduler.remove(probe);
      if (i % 1000 === 0) await clock.advance(1);
    }
    assert.equal(scheduler.size, 0);
    assert.ok(clock.pendingTimers <= 1);
    await clock.advance(1000);
    assert.equal(clock.pendingTimers, 0);
  });

  it('an expiry may remove another deadline of the same bucket, or add a new one', async () => {
    const { clock, scheduler } = setup();
    const victim = new Probe(clock);
    const later = new Probe(clock);
    const killer = new Probe(clock, () => {
      scheduler.remove(victim);
      scheduler.add(later, clock.monotonic() + 5);
    });
    scheduler.add(victim, 10);
    scheduler.add(killer, 10);
    await clock.advance(10);
    // Within one millisecond the order is unspecified: either the victim fired before the killer ran, or never.
    assert.equal(killer.firedAt, 10);
    assert.ok(victim.firedAt === undefined || victim.firedAt === 10);
    assert.equal(DeadlineScheduler.isScheduled(later), true);
    await clock.advance(5);
    assert.equal(later.firedAt, 15);
    assert.equal(scheduler.size, 0);
  });

  it('re-adding a scheduled deadline moves it', async () => {
    const { clock, scheduler } = setup();
    const probe = new Probe(clock);
    scheduler.add(probe, 10);
    scheduler.add(probe, 20);
    assert.equal(scheduler.size, 1);
    await clock.runAll();
    assert.equal(probe.firedAt, 20);
  });

  it('a throwing expiry does not stop the other deadlines', async () => {
    const { clock, scheduler } = setup();
    const uncaught: unknown[] = [];
    process.setUncaughtExceptionCaptureCallback((error) => uncaught.push(error));
    try {
      const ok = new Probe(clock);
      scheduler.add(
        new Probe(clock, () => {
          throw new Error('boom');
        }),
        5,
      );
      scheduler.add(ok, 5);
      await clock.advance(5);
      assert.equal(ok.firedAt, 5);
      assert.deepEqual(
        uncaught.map((error) => (error as Error).message),
        ['boom'],
      );
    } finally {
      process.setUncaughtExceptionCaptureCallback(null);
    }
  });
});

describe('DeadlineScheduler with far deadlines', () => {
  it('never asks its clock for a delay Node timers cannot hold (they would fire after 1 ms)', async () => {
    const clock = new VirtualClock();
    const delays: number[] = [];
    const recording = {
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
      setTimeout: (callback: () => void, ms: number) => {
        delays.push(ms);
        return clock.setTimeout(callback, ms);
      },
      clearTimeout: (handle: object) => clock.clearTimeout(handle),
    };
    const scheduler = DeadlineScheduler.for(recording);
    const due = 2 ** 32;
    const probe = new Probe(clock);
    scheduler.add(probe, due);
    await clock.advanceTo(due - 1);
    assert.equal(probe.firedAt, undefined);
    await clock.advanceTo(due);
    assert.equal(probe.firedAt, due);
    assert.ok(delays.length > 1);
    for (const ms of delays) assert.ok(ms <= 2 ** 31 - 1, `asked for ${ms} ms`);
  });
});

describe('DeadlineScheduler on the system clock', () => {
  it('keeps the process alive only while a deadline is pending', () => {
    const scheduler = DeadlineScheduler.for(systemClock);
    const baseline = timeoutHandles();
    const probe = new Probe(systemClock);
    scheduler.add(probe, systemClock.monotonic() + 60_000);
    assert.equal(timeoutHandles(), baseline + 1);
    scheduler.remove(probe);
    assert.equal(timeoutHandles(), baseline, 'the idle timer is unref’d');
    for (let i = 0; i < 10_000; i++) {
      const p = new Probe(systemClock);
      scheduler.add(p, systemClock.monotonic() + 60_000);
      scheduler.remove(p);
    }
    assert.equal(timeoutHandles(), baseline);
  });

  it('fires a real deadline no earlier than asked', async () => {
    const scheduler = DeadlineScheduler.for(systemClock);
    const at = systemClock.monotonic() + 5;
    const fired = await new Promise<number>((resolve) => {
      scheduler.add(new Probe(systemClock, () => resolve(systemClock.monotonic())), at);
    });
    assert.ok(fired >= at, `fired at ${fired}, due ${at}`);
    assert.equal(scheduler.size, 0);
  });
});

describe('signal sources', () => {
  it('reports the time left on a signal, Infinity without one, never negative', async () => {
    const clock = new VirtualClock();
    const { signal } = new AbortController();
    assert.equal(remainingMs(undefined), Number.POSITIVE_INFINITY);
    assert.equal(remainingMs(signal), Number.POSITIVE_INFINITY);
    setSignalDeadline(signal, clock, 250);
    assert.equal(remainingMs(signal), 250);
    assert.equal(remainingMs({ signal }), 250, 'options carrying the signal');
    await clock.advance(200);
    assert.equal(remainingMs(signal), 50);
    await clock.advance(100);
    assert.equal(remainingMs(signal), 0);
  });

  it('reads cancellation from plain options and from a lazy source without creating its signal', () => {
    class Lazy extends LazySignalSource {
      made = false;
      get signal(): AbortSignal {
        this.made = true;
        return AbortSignal.abort('made');
      }
      get cancelled() {
        return true;
      }
      get cancelReason() {
        return 'lazy';
      }
      remainingMs() {
        return 42;
      }
    }
    const lazy = new Lazy();
    assert.equal(isCancelled(lazy), true);
    assert.equal(cancelReasonOf(lazy), 'lazy');
    assert.equal(remainingMs(lazy), 42);
    assert.equal(lazy.made, false);

    const controller = new AbortController();
    assert.equal(isCancelled(undefined), false);
    assert.equal(isCancelled({}), false);
    assert.equal(isCancelled({ signal: controller.signal }), false);
    controller.abort('bye');
    assert.equal(isCancelled({ signal: controller.signal }), true);
    assert.equal(cancelReasonOf({ signal: controller.signal }), 'bye');
    assert.equal(cancelReasonOf(undefined), undefined);
  });
});
