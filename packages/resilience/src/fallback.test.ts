import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError, OperationCancelledError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { TimeoutError } from './errors.js';
import type { Failure } from './failure.js';
import { type FallbackEvent, type FallbackOptions, fallback } from './fallback.js';
import type { ExecuteContext, Policy } from './policy.js';
import { timeout } from './timeout.js';

const boom = new Error('boom');
const fails = () => {
  throw boom;
};

describe('fallback: options', () => {
  it('requires a fallback and validates the classifier', () => {
    const cases: [unknown, string][] = [
      [{}, 'fallback'],
      [null, 'options'],
      [{ fallback: 1, handle: 'all' }, 'handle'],
      [{ fallback: 1, handle: { error: true } }, 'handle.error'],
      [{ fallback: 1, handle: { result: 'x' } }, 'handle.result'],
    ];
    for (const [options, option] of cases) {
      assert.throws(
        () => fallback(options as FallbackOptions<unknown>),
        (error) => error instanceof InvalidOptionsError && error.option === option,
        JSON.stringify(options),
      );
    }
    assert.equal(fallback({ fallback: undefined }).name, 'fallback');
    assert.equal(fallback({ fallback: 0, name: 'cache' }).name, 'cache');
  });
});

describe('fallback: answers', () => {
  it('passes a success through untouched, without an event', async () => {
    const policy = fallback({ fallback: 'substitute' });
    const events: FallbackEvent[] = [];
    policy.events.on((event) => events.push(event));
    assert.equal(await policy.execute(() => 42), 42);
    assert.equal(await policy.execute(async () => 'real'), 'real');
    assert.equal(events.length, 0);
  });

  it('answers with a value when the operation throws or rejects', async () => {
    const policy = fallback({ fallback: 'substitute' });
    const answer: string | number = await policy.execute(fails as () => number);
    assert.equal(answer, 'substitute');
    assert.equal(await policy.execute(() => Promise.reject(boom)), 'substitute');
  });

  it('calls a function with the failure and the context, sync or async', async () => {
    const clock = new VirtualClock();
    const seen: [Failure, ExecuteContext][] = [];
    const policy = fallback({
      clock,
      fallback: async (failure: Failure, context: ExecuteContext) => {
        seen.push([failure, context]);
        return 'from cache';
      },
    });
    const events: FallbackEvent[] = [];
    policy.events.on((event) => events.push(event));
    const caller = new AbortController();
    assert.equal(await policy.execute(fails, { signal: caller.signal }), 'from cache');
    assert.deepEqual(seen[0]?.[0], { error: boom });
    assert.equal(seen[0]?.[1].signal, caller.signal);
    assert.equal(seen[0]?.[1].attempt, 1);
    assert.deepEqual(events, [
      { component: 'fallback', name: 'fallback', type: 'fallback', at: clock.now(), cause: { error: boom } },
    ]);
    const sync = fallback({ fallback: (failure: Failure) => ('error' in failure ? 'sync' : 'result') });
    assert.equal(await sync.execute(fails), 'sync');
  });

  it('replaces results only when the classifier says they are failures', async () => {
    const untouched = fallback({ fallback: { status: 200, body: 'cached' } });
    assert.deepEqual(
      await untouched.execute(() => ({ status: 503 })),
      { status: 503 },
      'no results by default',
    );
    const causes: Failure[] = [];
    const policy = fallback({
      handle: { result: (r) => (r as { status: number }).status >= 500 },
      fallback: (failure: Failure) => {
        causes.push(failure);
        return { status: 200, body: 'cached' };
      },
    });
    assert.deepEqual(await policy.execute(() => ({ status: 503 })), { status: 200, body: 'cached' });
    assert.deepEqual(await policy.execute(() => ({ status: 404 })), { status: 404 });
    assert.deepEqual(causes, [{ result: { status: 503 } }]);
  });

  it('rethrows errors its classifier does not handle', async () => {
    const policy = fallback({ fallback: 'substitute', handle: { error: (e) => e instanceof TimeoutError } });
    await assert.rejects(policy.execute(fails), (error) => error === boom);
    assert.equal(
      await policy.execute(() => {
        throw new TimeoutError(5);
      }),
      'substitute',
    );
  });

  it('lets an error of the fallback function reach the caller', async () => {
    const broken = new Error('cache down too');
    const policy = fallback({
      fallback: () => {
        throw broken;
      },
    });
    await assert.rejects(policy.execute(fails), (error) => error === broken);
  });

  it('is typed as the union of both answers, and is still a Policy', async () => {
    const policy = fallback({ fallback: 'none' as const });
    const answer: number | 'none' = await policy.execute(() => 42);
    const asPolicy: Policy = policy;
    assert.equal(answer, 42);
    assert.equal(asPolicy.name, 'fallback');
  });
});

describe('fallback: cancellation', () => {
  it('never swallows OperationCancelledError by default', async () => {
    const policy = fallback({ fallback: 'substitute' });
    const cancelled = new OperationCancelledError('stop');
    await assert.rejects(
      policy.execute(() => {
        throw cancelled;
      }),
      (error) => error === cancelled,
    );
  });

  it('gives no substitute to a caller who cancelled, whatever the operation threw', async () => {
    const policy = fallback({ fallback: 'substitute' });
    const caller = new AbortController();
    const abortError = new DOMException('aborted', 'AbortError');
    await assert.rejects(
      policy.execute(
        () => {
          caller.abort();
          throw abortError;
        },
        { signal: caller.signal },
      ),
      (error) => error === abortError,
    );
    let ran = false;
    await assert.rejects(
      policy.execute(
        () => {
          ran = true;
        },
        { signal: caller.signal },
      ),
      OperationCancelledError,
    );
    assert.equal(ran, false, 'an already cancelled caller does not run the operation');
  });

  it('swallows a cancellation when a custom classifier says so', async () => {
    const policy = fallback({ fallback: 'substitute', handle: { error: () => true } });
    assert.equal(
      await policy.execute(() => {
        throw new OperationCancelledError();
      }),
      'substitute',
    );
  });

  it('inside a timeout, hands the operation the timeout’s own context and replaces the TimeoutError', async () => {
    const clock = new VirtualClock();
    const outer = timeout({ timeoutMs: 100, clock });
    const policy = fallback({ fallback: 'too slow' });
    let outerContext: ExecuteContext | undefined;
    let innerContext: ExecuteContext | undefined;
    assert.equal(
      await outer.execute((context) => {
        outerContext = context;
        return policy.execute((inner) => {
          innerContext = inner;
          return 'fast';
        }, context);
      }),
      'fast',
    );
    assert.equal(innerContext, outerContext);
    const inner = timeout({ timeoutMs: 50, clock });
    const call = policy.execute(() =>
      inner.execute(
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      ),
    );
    await clock.advance(50);
    assert.equal(await call, 'too slow');
  });
});
