import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exponentialBackoff, InvalidOptionsError, OperationCancelledError } from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { BrokenCircuitError, IsolatedCircuitError } from '../errors.js';
import {
  type CircuitBreakerEvent,
  type CircuitBreakerOptions,
  type CircuitBreakerPolicy,
  circuitBreaker,
} from './circuit-breaker.js';

const boom = new Error('boom');
const fail = () => Promise.reject(boom);
const ok = async () => 'ok';

function setup(options: CircuitBreakerOptions = {}) {
  const clock = new VirtualClock();
  const breaker = circuitBreaker({ clock, openMs: 1000, ...options });
  const events: CircuitBreakerEvent[] = [];
  breaker.events.on((e) => events.push(e));
  const changes = () =>
    events.flatMap((e) => (e.type === 'state-change' ? [`${e.from}->${e.to}:${e.reason}`] : []));
  return { clock, breaker, events, changes };
}

async function failTimes(breaker: CircuitBreakerPolicy, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await assert.rejects(breaker.execute(fail), boom);
}

/** An operation whose settlement the test controls. */
function deferred<T = string>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('circuitBreaker', () => {
  describe('closed', () => {
    it('runs calls and returns their results, passing the caller signal through', async () => {
      const { breaker } = setup();
      const controller = new AbortController();
      let seen: AbortSignal | undefined;
      const value = await breaker.execute(
        ({ signal, attempt }) => {
          seen = signal;
          return attempt + 41;
        },
        { signal: controller.signal },
      );
      assert.equal(value, 42);
      assert.equal(seen, controller.signal);
      assert.equal(breaker.state, 'closed');
    });

    it('stays closed after N-1 failures and opens on the N-th (default: 5 in a row)', async () => {
      const { breaker, changes } = setup();
      await failTimes(breaker, 4);
      assert.equal(breaker.state, 'closed');
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open');
      assert.deepEqual(changes(), ['closed->open:trip-rule']);
    });

    it('rejects a call whose signal already aborted without running it', async () => {
      const { breaker } = setup();
      let ran = false;
      await assert.rejects(
        breaker.execute(
          () => {
            ran = true;
          },
          { signal: AbortSignal.abort('stop') },
        ),
        OperationCancelledError,
      );
      assert.equal(ran, false);
    });

    it('never counts a cancellation as a failure', async () => {
      const { breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await assert.rejects(
        breaker.execute(() => Promise.reject(new OperationCancelledError('gone'))),
        OperationCancelledError,
      );
      const controller = new AbortController();
      const reason = new Error('caller left');
      await assert.rejects(
        breaker.execute(
          () => {
            controller.abort(reason);
            return Promise.reject(reason);
          },
          { signal: controller.signal },
        ),
        reason,
      );
      assert.equal(breaker.state, 'closed');
    });

    it('counts only what `handle` calls a failure; other errors count as successes', async () => {
      const notFound = Object.assign(new Error('404'), { status: 404 });
      const { breaker } = setup({
        trip: { kind: 'consecutive-failures', failures: 2 },
        handle: { error: (e) => e !== notFound },
      });
      await failTimes(breaker, 1);
      await assert.rejects(
        breaker.execute(() => Promise.reject(notFound)),
        notFound,
      ); // resets the run
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'closed');
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open');
    });

    it('can treat returned values as failures', async () => {
      const { breaker } = setup({
        trip: { kind: 'consecutive-failures', failures: 2 },
        handle: { result: (v) => (v as { status: number }).status >= 500 },
      });
      assert.deepEqual(await breaker.execute(() => ({ status: 500 })), { status: 500 });
      await breaker.execute(() => ({ status: 502 }));
      assert.equal(breaker.state, 'open');
      assert.deepEqual(breaker.lastFailure, { status: 502 });
    });

    it('opens on failures within a rolling time window only (failure-count)', async () => {
      const { clock, breaker } = setup({ trip: { kind: 'failure-count', failures: 3, windowMs: 10_000 } });
      await failTimes(breaker, 2);
      await clock.advance(10_000); // both age out
      await failTimes(breaker, 2);
      assert.equal(breaker.state, 'closed');
      await clock.advance(5000);
      await breaker.execute(ok); // successes do not reset a count rule
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open');
    });

    it('opens on a failure ratio with a minimum throughput (failure-ratio)', async () => {
      const { breaker } = setup({
        trip: { kind: 'failure-ratio', ratio: 0.5, windowMs: 10_000, minThroughput: 6 },
      });
      await breaker.execute(ok);
      await breaker.execute(ok);
      await breaker.execute(ok);
      await failTimes(breaker, 2);
      assert.equal(breaker.state, 'closed'); // 2 of 5, below throughput
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open'); // 3 of 6
    });

    it('opens on a slow-call ratio measured on the clock (slow-call-ratio)', async () => {
      const { clock, breaker, events } = setup({
        trip: { kind: 'slow-call-ratio', slowCallMs: 1000, ratio: 0.5, windowMs: 60_000, minThroughput: 2 },
      });
      await breaker.execute(ok); // fast: no time passes
      const pending = breaker.execute(async () => {
        await clock.advance(1500);
        return 'late';
      });
      assert.equal(await pending, 'late');
      assert.equal(breaker.state, 'open');
      const success = events.filter((e) => e.type === 'success');
      assert.deepEqual(
        success.map((e) => e.type === 'success' && e.durationMs),
        [0, 1500],
      );
    });

    it('does not apply the outcome of a call started before a state change', async () => {
      const { breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      const slow = deferred();
      const pending = breaker.execute(() => slow.promise);
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open');
      slow.resolve('late');
      assert.equal(await pending, 'late');
      assert.equal(breaker.state, 'open');
    });
  });

  describe('open', () => {
    it('fails fast without running the operation, carrying the last failure and retryAt', async () => {
      const { clock, breaker, events } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await failTimes(breaker, 1);
      await clock.advance(250);
      let ran = false;
      const error = await breaker
        .execute(() => {
          ran = true;
        })
        .catch((e: unknown) => e);
      assert.ok(error instanceof BrokenCircuitError);
      assert.equal(ran, false);
      assert.equal(error.lastFailure, boom);
      assert.equal(error.cause, boom);
      assert.equal(error.retryAt, clock.now() + 750);
      assert.equal(error.code, 'ERR_STRATUS_BROKEN_CIRCUIT');
      assert.ok(events.some((e) => e.type === 'rejected' && e.state === 'open'));
    });

    it('turns half-open once the open period ran out', async () => {
      const { clock, breaker, changes } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await failTimes(breaker, 1);
      await clock.advance(999);
      assert.equal(breaker.state, 'open');
      await clock.advance(1);
      assert.equal(breaker.state, 'half-open');
      assert.deepEqual(changes(), ['closed->open:trip-rule', 'open->half-open:open-elapsed']);
    });

    it('backs off the open period on each consecutive re-open, and resets it on close', async () => {
      const { clock, breaker } = setup({
        trip: { kind: 'consecutive-failures', failures: 1 },
        openMs: exponentialBackoff({ initialMs: 1000, factor: 2, maxMs: 60_000 }),
      });
      const openFor = async (): Promise<number> => {
        const error = (await breaker.execute(ok).catch((e: unknown) => e)) as BrokenCircuitError;
        return (error.retryAt ?? 0) - clock.now();
      };
      await failTimes(breaker, 1);
      assert.equal(await openFor(), 1000);
      await clock.advance(1000);
      await failTimes(breaker, 1); // trial fails
      assert.equal(await openFor(), 2000);
      await clock.advance(2000);
      await failTimes(breaker, 1);
      assert.equal(await openFor(), 4000);
      await clock.advance(4000);
      await breaker.execute(ok); // trial succeeds: closed
      assert.equal(breaker.state, 'closed');
      await failTimes(breaker, 1);
      assert.equal(await openFor(), 1000);
    });
  });

  describe('half-open', () => {
    async function halfOpen(options: CircuitBreakerOptions = {}) {
      const env = setup({ trip: { kind: 'consecutive-failures', failures: 1 }, ...options });
      await failTimes(env.breaker, 1);
      await env.clock.advance(1000);
      assert.equal(env.breaker.state, 'half-open');
      return env;
    }

    it('closes after a successful trial', async () => {
      const { breaker, changes } = await halfOpen();
      assert.equal(await breaker.execute(ok), 'ok');
      assert.equal(breaker.state, 'closed');
      assert.deepEqual(changes().slice(-1), ['half-open->closed:trials-succeeded']);
    });

    it('needs the configured number of consecutive trial successes to close', async () => {
      const { breaker } = await halfOpen({ halfOpen: { successesToClose: 3 } });
      await breaker.execute(ok);
      await breaker.execute(ok);
      assert.equal(breaker.state, 'half-open');
      await breaker.execute(ok);
      assert.equal(breaker.state, 'closed');
    });

    it('reopens on any trial failure and restarts the open timer', async () => {
      const { clock, breaker, changes } = await halfOpen({ halfOpen: { successesToClose: 2 } });
      await breaker.execute(ok);
      await clock.advance(300);
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'open');
      await clock.advance(999);
      assert.equal(breaker.state, 'open');
      await clock.advance(1);
      assert.equal(breaker.state, 'half-open');
      assert.deepEqual(changes().slice(2), ['half-open->open:trial-failed', 'open->half-open:open-elapsed']);
    });

    it('admits exactly the configured number of trials among 1,000 concurrent calls', async () => {
      for (const maxConcurrent of [1, 3]) {
        const { breaker } = await halfOpen({ halfOpen: { maxConcurrent, successesToClose: 5 } });
        const gate = deferred();
        let started = 0;
        const calls = Array.from({ length: 1000 }, () =>
          breaker.execute(() => {
            started++;
            return gate.promise;
          }),
        );
        const settled = Promise.allSettled(calls);
        await flushMicrotasks();
        assert.equal(started, maxConcurrent);
        gate.resolve('ok');
        const outcomes = await settled;
        const rejected = outcomes.filter((o) => o.status === 'rejected');
        assert.equal(rejected.length, 1000 - maxConcurrent);
        assert.ok(rejected.every((o) => o.status === 'rejected' && o.reason instanceof BrokenCircuitError));
      }
    });

    it('frees the trial slot of a cancelled trial without deciding anything', async () => {
      const { breaker } = await halfOpen();
      const controller = new AbortController();
      const trial = breaker.execute(
        ({ signal }) =>
          new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(new OperationCancelledError())),
          ),
        { signal: controller.signal },
      );
      await assert.rejects(breaker.execute(ok), BrokenCircuitError); // slot taken
      controller.abort();
      await assert.rejects(trial, OperationCancelledError);
      assert.equal(breaker.state, 'half-open');
      assert.equal(await breaker.execute(ok), 'ok');
      assert.equal(breaker.state, 'closed');
    });

    it('frees the trial slot when a classifier throws: the call fails with its error and decides nothing', async () => {
      const classifierError = new Error('classifier bug');
      let throwing = false;
      const classify = (outcome: unknown) => {
        if (throwing) throw classifierError;
        return outcome === boom;
      };
      const { breaker } = await halfOpen({ handle: { error: classify, result: classify } });
      throwing = true;
      await assert.rejects(breaker.execute(ok), classifierError);
      assert.equal(breaker.state, 'half-open');
      await assert.rejects(breaker.execute(fail), classifierError);
      assert.equal(breaker.state, 'half-open');
      throwing = false;
      assert.equal(await breaker.execute(ok), 'ok');
      assert.equal(breaker.state, 'closed');
    });

    it('rejects overflow calls with a BrokenCircuitError saying the slots are taken', async () => {
      const { breaker } = await halfOpen();
      const gate = deferred();
      const trial = breaker.execute(() => gate.promise);
      const error = await breaker.execute(ok).catch((e: unknown) => e);
      assert.ok(error instanceof BrokenCircuitError);
      assert.match(error.message, /half-open/);
      gate.resolve('ok');
      await trial;
    });
  });

  describe('Retry-After', () => {
    const unavailable = (retryAfter: string, status = 503) =>
      Object.assign(new Error(`HTTP ${status}`), { status, headers: { 'retry-after': retryAfter } });

    it('opens at once for at least the Retry-After period', async () => {
      const { clock, breaker, changes } = setup();
      await assert.rejects(breaker.execute(() => Promise.reject(unavailable('30'))));
      assert.equal(breaker.state, 'open');
      assert.deepEqual(changes(), ['closed->open:retry-after']);
      const error = (await breaker.execute(ok).catch((e: unknown) => e)) as BrokenCircuitError;
      assert.equal(error.retryAt, clock.now() + 30_000);
      await clock.advance(29_999);
      assert.equal(breaker.state, 'open');
      await clock.advance(1);
      assert.equal(breaker.state, 'half-open');
    });

    it('keeps the longer of the open period and Retry-After', async () => {
      const { clock, breaker } = setup({ openMs: 10_000 });
      await assert.rejects(breaker.execute(() => Promise.reject(unavailable('1', 429))));
      await clock.advance(9_999);
      assert.equal(breaker.state, 'open');
    });

    it('honours Retry-After on failing results and HTTP dates, capped at maxMs', async () => {
      const { clock, breaker } = setup({
        handle: { result: (r) => (r as { status: number }).status === 429 },
        retryAfter: { maxMs: 60_000 },
      });
      const date = new Date(clock.now() + 3_600_000).toUTCString();
      await breaker.execute(() => ({ status: 429, headers: new Headers({ 'Retry-After': date }) }));
      assert.equal(breaker.state, 'open');
      await clock.advance(60_000);
      assert.equal(breaker.state, 'half-open');
    });

    it('reopens a half-open circuit for the Retry-After period of a failed trial', async () => {
      const { clock, breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await failTimes(breaker, 1);
      await clock.advance(1000);
      await assert.rejects(breaker.execute(() => Promise.reject(unavailable('20'))));
      await clock.advance(19_999);
      assert.equal(breaker.state, 'open');
    });

    it('ignores Retry-After when turned off, or on statuses not listed', async () => {
      const off = setup({ retryAfter: false });
      await assert.rejects(off.breaker.execute(() => Promise.reject(unavailable('30'))));
      assert.equal(off.breaker.state, 'closed');
      const only429 = setup({ retryAfter: { statuses: [429] } });
      await assert.rejects(only429.breaker.execute(() => Promise.reject(unavailable('30', 503))));
      assert.equal(only429.breaker.state, 'closed');
    });
  });

  describe('isolate and reset', () => {
    it('holds the circuit open until every handle is released', async () => {
      const { breaker, changes } = setup();
      const release1 = breaker.isolate();
      const release2 = breaker.isolate();
      assert.equal(breaker.state, 'isolated');
      const error = await breaker.execute(ok).catch((e: unknown) => e);
      assert.ok(error instanceof IsolatedCircuitError);
      assert.equal(error.retryAt, undefined);
      release1();
      release1(); // idempotent
      assert.equal(breaker.state, 'isolated');
      release2();
      assert.equal(breaker.state, 'closed');
      assert.deepEqual(changes(), ['closed->isolated:isolated', 'isolated->closed:released']);
    });

    it('reset() forces closed from any state and makes old handles inert', async () => {
      const { breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 2 } });
      const release = breaker.isolate();
      breaker.reset();
      assert.equal(breaker.state, 'closed');
      const again = breaker.isolate();
      release(); // from the earlier isolation: does nothing
      assert.equal(breaker.state, 'isolated');
      again();
      await failTimes(breaker, 2);
      assert.equal(breaker.state, 'open');
      breaker.reset();
      assert.equal(breaker.state, 'closed');
    });

    it('reset() on a closed circuit forgets its counters', async () => {
      const { breaker, changes } = setup({ trip: { kind: 'consecutive-failures', failures: 2 } });
      await failTimes(breaker, 1);
      breaker.reset();
      await failTimes(breaker, 1);
      assert.equal(breaker.state, 'closed');
      assert.deepEqual(changes(), []);
    });
  });

  describe('export and restore', () => {
    const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value));

    it('restores an open circuit with its open-until time on another clock', async () => {
      const { clock, breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await failTimes(breaker, 1);
      await clock.advance(400);
      const snapshot = roundTrip(breaker.exportState());
      assert.equal(snapshot.state, 'open');
      assert.equal(snapshot.openUntil, clock.now() + 600);

      const later = new VirtualClock({ now: clock.now(), monotonic: 123_456 });
      const restored = circuitBreaker({ clock: later, openMs: 1000, initialState: snapshot });
      assert.equal(restored.state, 'open');
      await later.advance(599);
      assert.equal(restored.state, 'open');
      await later.advance(1);
      assert.equal(restored.state, 'half-open');
    });

    it('continues the open-period backoff where the snapshot left it', async () => {
      const openMs = exponentialBackoff({ initialMs: 1000 });
      const { clock, breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 }, openMs });
      await failTimes(breaker, 1);
      await clock.advance(1000);
      await failTimes(breaker, 1); // second opening: 2000
      const restored = circuitBreaker({
        clock,
        openMs,
        trip: { kind: 'consecutive-failures', failures: 1 },
        initialState: roundTrip(breaker.toJSON()),
      });
      await clock.advance(2000);
      await failTimes(restored, 1); // third opening: 4000
      await clock.advance(3999);
      assert.equal(restored.state, 'open');
    });

    it('exports half-open as open until now, so the restored breaker probes at once', async () => {
      const { clock, breaker } = setup({ trip: { kind: 'consecutive-failures', failures: 1 } });
      await failTimes(breaker, 1);
      await clock.advance(1000);
      assert.equal(breaker.state, 'half-open');
      const snapshot = breaker.exportState();
      assert.deepEqual([snapshot.state, snapshot.openUntil], ['open', clock.now()]);
      const restored = circuitBreaker({ clock, initialState: snapshot });
      assert.equal(restored.state, 'half-open');
    });

    it('restores the trip rule counters of a closed circuit', async () => {
      const trip = { kind: 'consecutive-failures', failures: 3 } as const;
      const { clock, breaker } = setup({ trip });
      await failTimes(breaker, 2);
      const restored = circuitBreaker({ clock, trip, initialState: roundTrip(breaker.exportState()) });
      await failTimes(restored, 1);
      assert.equal(restored.state, 'open');
    });

    it('restores an isolation, which reset() ends', () => {
      const { clock, breaker } = setup();
      breaker.isolate();
      const restored = circuitBreaker({ clock, initialState: roundTrip(breaker.exportState()) });
      assert.equal(restored.state, 'isolated');
      restored.reset();
      assert.equal(restored.state, 'closed');
    });

    it('rejects a malformed snapshot', () => {
      const bad = [
        { version: 2, state: 'closed', openCount: 0, lastOpenMs: 0 },
        { version: 1, state: 'ajar', openCount: 0, lastOpenMs: 0 },
        { version: 1, state: 'open', openCount: -1, lastOpenMs: 0 },
        { version: 1, state: 'open', openCount: 0, lastOpenMs: 0, openUntil: 'soon' },
      ];
      for (const initialState of bad) {
        assert.throws(
          () => circuitBreaker({ initialState: initialState as never }),
          InvalidOptionsError,
          JSON.stringify(initialState),
        );
      }
    });
  });

  describe('events', () => {
    it('emits typed success, failure, rejected and state-change events in order', async () => {
      const { breaker, events } = setup({
        name: 'payments',
        trip: { kind: 'consecutive-failures', failures: 1 },
      });
      await breaker.execute(ok);
      await failTimes(breaker, 1);
      await assert.rejects(breaker.execute(ok), BrokenCircuitError);
      assert.deepEqual(
        events.map((e) => e.type),
        ['success', 'state-change', 'failure', 'rejected'],
      );
      const change = events[1];
      assert.ok(change?.type === 'state-change');
      assert.equal(change.lastFailure, boom);
      assert.equal(change.component, 'circuit-breaker');
      assert.equal(change.name, 'payments');
      const failure = events[2];
      assert.ok(failure?.type === 'failure' && failure.failure === boom && failure.state === 'closed');
    });
  });

  describe('options', () => {
    it('rejects invalid options naming the offending option', () => {
      const cases: [CircuitBreakerOptions, string][] = [
        [{ openMs: -1 }, 'openMs'],
        [{ openMs: Number.NaN }, 'openMs'],
        [{ openMs: {} as never }, 'openMs.delay'],
        [{ halfOpen: { maxConcurrent: 0 } }, 'halfOpen.maxConcurrent'],
        [{ halfOpen: { successesToClose: 1.5 } }, 'halfOpen.successesToClose'],
        [{ handle: { error: 'yes' as never } }, 'handle.error'],
        [{ retryAfter: { maxMs: -1 } }, 'retryAfter.maxMs'],
        [{ retryAfter: { statuses: [42] } }, 'retryAfter.statuses[0]'],
        [{ trip: { kind: 'failure-ratio', ratio: 2, windowMs: 1000 } }, 'trip.ratio'],
        [{ trip: { kind: 'failure-count', failures: 0, windowMs: 1000 } }, 'trip.failures'],
        [
          { trip: { kind: 'slow-call-ratio', slowCallMs: -1, ratio: 0.5, windowMs: 1000 } },
          'trip.slowCallMs',
        ],
      ];
      for (const [options, option] of cases) {
        assert.throws(
          () => circuitBreaker(options),
          (e: unknown) => e instanceof InvalidOptionsError && e.option === option,
          option,
        );
      }
    });
  });
});
