import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Backoff,
  constantBackoff,
  decorrelatedJitterBackoff,
  exponentialBackoff,
  InvalidOptionsError,
  immediateBackoff,
  linearBackoff,
  neverAbortedSignal,
  OperationCancelledError,
} from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { BrokenCircuitError, BulkheadRejectedError } from './errors.js';
import type { ExecuteContext } from './policy.js';
import { type RetryEvent, type RetryOptions, retry } from './retry.js';
import { timeout } from './timeout.js';

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

function networkError(code = 'ECONNRESET'): Error {
  return Object.assign(new Error(`socket: ${code}`), { code });
}

/** Lets the calls started so far run, then fires every timer until none is left. */
async function runToEnd(clock: VirtualClock): Promise<void> {
  await flushMicrotasks();
  await clock.runAll();
}

/** Runs a retry on a virtual clock to the end, recording what happened and when. */
async function run<T>(options: RetryOptions, outcome: (attempt: number) => T | Promise<T>) {
  const clock = new VirtualClock();
  const policy = retry({ clock, ...options });
  const events: RetryEvent[] = [];
  policy.events.on((event) => events.push(event));
  const startedAt: number[] = [];
  const attempts: number[] = [];
  const call = policy.execute(async (context) => {
    startedAt.push(clock.monotonic());
    attempts.push(context.attempt);
    return outcome(context.attempt);
  });
  const settled = call.then(
    (value): { value?: T; error?: unknown } => ({ value }),
    (error: unknown): { value?: T; error?: unknown } => ({ error }),
  );
  await runToEnd(clock);
  const result = await settled;
  return {
    ...result,
    clock,
    events,
    startedAt,
    attempts,
    delays: events.flatMap((e) => (e.type === 'retry' ? [e.delayMs] : [])),
  };
}

const alwaysFails = () => {
  throw networkError();
};

/** A random source that replays `values` (then repeats the last one). */
function replay(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
}

describe('retry: options', () => {
  const invalid: [RetryOptions, string][] = [
    [{ maxAttempts: 0 }, 'maxAttempts'],
    [{ maxAttempts: -1 }, 'maxAttempts'],
    [{ maxAttempts: 1.5 }, 'maxAttempts'],
    [{ maxAttempts: '3' as unknown as number }, 'maxAttempts'],
    [{ backoff: {} as Backoff }, 'backoff.delay'],
    [{ backoff: 5 as unknown as Backoff }, 'backoff'],
    [{ budgetMs: -1 }, 'budgetMs'],
    [{ budgetMs: Number.NaN }, 'budgetMs'],
    [{ maxRetryAfterMs: -5 }, 'maxRetryAfterMs'],
    [{ handle: 5 as unknown as object }, 'handle'],
    [{ handle: { error: 'yes' as unknown as () => boolean } }, 'handle.error'],
    [{ handle: { result: 1 as unknown as () => boolean } }, 'handle.result'],
    [{ honorRetryAfter: 'yes' as unknown as boolean }, 'honorRetryAfter'],
    [{ retryPolicyRejections: 1 as unknown as boolean }, 'retryPolicyRejections'],
  ];
  for (const [options, option] of invalid) {
    it(`rejects a bad ${option}: ${JSON.stringify(options)}`, () => {
      assert.throws(
        () => retry(options),
        (error) => error instanceof InvalidOptionsError && error.option === option,
      );
    });
  }

  it('has sensible defaults', () => {
    const policy = retry();
    assert.equal(policy.maxAttempts, 4);
    assert.equal(policy.backoff.kind, 'exponential');
    assert.equal(policy.name, 'retry');
    assert.equal(retry({ maxAttempts: Number.POSITIVE_INFINITY, budgetMs: 1000 }).maxAttempts, Infinity);
    assert.throws(() => retry({ maxAttempts: Number.POSITIVE_INFINITY }), /budgetMs/);
    assert.throws(() => retry(null as unknown as RetryOptions), InvalidOptionsError);
  });
});

describe('retry: delay sequences', () => {
  it('immediate: no waits and no timers at all', async () => {
    const r = await run({ maxAttempts: 4, backoff: immediateBackoff() }, alwaysFails);
    assert.deepEqual(r.delays, [0, 0, 0]);
    assert.deepEqual(r.startedAt, [0, 0, 0, 0]);
  });

  it('constant', async () => {
    const r = await run({ maxAttempts: 4, backoff: constantBackoff(50) }, alwaysFails);
    assert.deepEqual(r.delays, [50, 50, 50]);
    assert.deepEqual(r.startedAt, [0, 50, 100, 150]);
  });

  it('linear', async () => {
    const r = await run(
      { maxAttempts: 5, backoff: linearBackoff({ initialMs: 100, incrementMs: 50 }) },
      alwaysFails,
    );
    assert.deepEqual(r.delays, [100, 150, 200, 250]);
    assert.deepEqual(r.startedAt, [0, 100, 250, 450, 700]);
  });

  it('exponential with a cap', async () => {
    const backoff = exponentialBackoff({ initialMs: 100, factor: 2, maxMs: 500 });
    const r = await run({ maxAttempts: 6, backoff }, alwaysFails);
    assert.deepEqual(r.delays, [100, 200, 400, 500, 500]);
  });

  it('decorrelated jitter, with an injected random source', async () => {
    const backoff = decorrelatedJitterBackoff({
      initialMs: 100,
      maxMs: 1000,
      random: replay(0.5, 0.25, 1, 0),
    });
    const r = await run({ maxAttempts: 5, backoff }, alwaysFails);
    // uniform in [100, 3 × previous]: 100 + 0.5·200, 100 + 0.25·500, 100 + 1·575, 100 + 0·1925
    assert.deepEqual(r.delays, [200, 225, 675, 100]);
  });

  it('the default: exponential from 100 ms, doubling, with equal jitter', async () => {
    const r = await run({}, alwaysFails);
    assert.equal(r.delays.length, 3);
    [100, 200, 400].forEach((exact, i) => {
      const delay = r.delays[i]!;
      assert.ok(
        delay >= exact / 2 && delay <= exact,
        `retry ${i + 1}: ${delay} not in [${exact / 2}, ${exact}]`,
      );
    });
  });
});

describe('retry: attempts and outcomes', () => {
  it('transient twice, then success: 3 attempts, numbered in the context', async () => {
    const r = await run({ backoff: constantBackoff(10) }, (attempt) => {
      if (attempt < 3) throw networkError();
      return 'ok';
    });
    assert.equal(r.value, 'ok');
    assert.deepEqual(r.attempts, [1, 2, 3]);
    assert.deepEqual(r.events.at(-1), {
      component: 'retry',
      name: 'retry',
      at: r.clock.now(),
      type: 'success',
      attempts: 3,
    });
  });

  it('rethrows the last error itself when the attempts run out', async () => {
    const errors: Error[] = [];
    const r = await run({ maxAttempts: 3, backoff: immediateBackoff() }, () => {
      const error = networkError();
      errors.push(error);
      throw error;
    });
    assert.equal(r.error, errors[2]);
    assert.deepEqual(r.attempts, [1, 2, 3]);
    const giveUp = r.events.at(-1);
    assert.equal(giveUp?.type, 'give-up');
    assert.deepEqual(giveUp, { ...giveUp, attempts: 3, reason: 'max-attempts', cause: { error: errors[2] } });
  });

  it('maxAttempts 1 never retries', async () => {
    const r = await run({ maxAttempts: 1 }, alwaysFails);
    assert.deepEqual(r.attempts, [1]);
    assert.equal(r.delays.length, 0);
  });

  it('returns the last result when every attempt failed on a result', async () => {
    const responses = [{ status: 503 }, { status: 502 }, { status: 500 }];
    const r = await run({ maxAttempts: 3, backoff: immediateBackoff() }, (attempt) => responses[attempt - 1]);
    assert.equal(r.value, responses[2]);
    assert.deepEqual(
      r.events.map((e) => (e.type === 'success' ? e.type : [e.type, e.cause])),
      [
        ['retry', { result: responses[0] }],
        ['retry', { result: responses[1] }],
        ['give-up', { result: responses[2] }],
      ],
    );
  });

  it('retry events carry the attempt, the delay, the cause and the reason', async () => {
    const first = networkError();
    const r = await run({ backoff: constantBackoff(30) }, (attempt) => {
      if (attempt === 1) throw first;
      if (attempt === 2) return { status: 429 };
      return { status: 200 };
    });
    assert.deepEqual(
      r.events.map(({ at: _, ...event }) => event),
      [
        {
          component: 'retry',
          name: 'retry',
          type: 'retry',
          attempt: 1,
          delayMs: 30,
          reason: 'backoff',
          cause: { error: first },
        },
        {
          component: 'retry',
          name: 'retry',
          type: 'retry',
          attempt: 2,
          delayMs: 30,
          reason: 'backoff',
          cause: { result: { status: 429 } },
        },
        { component: 'retry', name: 'retry', type: 'success', attempts: 3 },
      ],
    );
  });

  it('stops early when the next wait would end past the time budget', async () => {
    const r = await run({ maxAttempts: 10, backoff: constantBackoff(100), budgetMs: 250 }, alwaysFails);
    assert.deepEqual(r.startedAt, [0, 100, 200]);
    assert.equal(r.clock.monotonic(), 200, 'gave up at once, without waiting');
    const giveUp = r.events.at(-1);
    assert.ok(giveUp?.type === 'give-up' && giveUp.reason === 'budget' && giveUp.attempts === 3);
  });

  it('keeps attempts of concurrent calls apart', async () => {
    const clock = new VirtualClock();
    const policy = retry({ clock, maxAttempts: 5, backoff: constantBackoff(10) });
    const calls = Array.from({ length: 50 }, (_, i) =>
      policy.execute(({ attempt }) => {
        if (attempt <= i % 4) throw networkError();
        return `${i}@${attempt}`;
      }),
    );
    await runToEnd(clock);
    assert.deepEqual(
      await Promise.all(calls),
      Array.from({ length: 50 }, (_, i) => `${i}@${(i % 4) + 1}`),
    );
  });
});

describe('retry: what is retried', () => {
  for (const status of [400, 401, 403, 404]) {
    it(`never retries HTTP ${status}, as an error or as a result`, async () => {
      const error = new HttpError(status);
      const thrown = await run({ backoff: immediateBackoff() }, () => {
        throw error;
      });
      assert.equal(thrown.error, error);
      assert.deepEqual(thrown.attempts, [1]);
      const returned = await run({ backoff: immediateBackoff() }, () => ({ status }));
      assert.deepEqual(returned.value, { status });
      assert.deepEqual(returned.attempts, [1]);
    });
  }

  for (const status of [408, 429, 500, 502, 503, 504]) {
    it(`retries HTTP ${status}, as an error or as a result`, async () => {
      const thrown = await run({ backoff: immediateBackoff() }, (attempt) => {
        if (attempt === 1) throw new HttpError(status);
        return 'ok';
      });
      assert.equal(thrown.value, 'ok');
      assert.deepEqual(thrown.attempts, [1, 2]);
      const returned = await run({ backoff: immediateBackoff() }, (attempt) => ({
        status: attempt === 1 ? status : 200,
      }));
      assert.deepEqual(returned.value, { status: 200 });
      assert.deepEqual(returned.attempts, [1, 2]);
    });
  }

  it('retries ECONNRESET and other network errors, not plain errors', async () => {
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT']) {
      const r = await run({ maxAttempts: 2, backoff: immediateBackoff() }, () => {
        throw networkError(code);
      });
      assert.deepEqual(r.attempts, [1, 2], code);
    }
    const plain = await run({ backoff: immediateBackoff() }, () => {
      throw new TypeError('a bug');
    });
    assert.deepEqual(plain.attempts, [1]);
  });

  it('a custom classifier replaces only the member it gives', async () => {
    const custom = {
      handle: { error: (e: unknown) => e instanceof TypeError },
      backoff: immediateBackoff(),
      maxAttempts: 2,
    };
    const typeErrors = await run(custom, () => {
      throw new TypeError('flaky');
    });
    assert.deepEqual(typeErrors.attempts, [1, 2]);
    const network = await run(custom, () => {
      throw networkError();
    });
    assert.deepEqual(network.attempts, [1], 'the error classifier was replaced');
    const results = await run(custom, () => ({ status: 503 }));
    assert.deepEqual(results.attempts, [1, 2], 'results still use the default');
    const noResults = await run({ ...custom, handle: { result: () => false } }, () => ({ status: 503 }));
    assert.deepEqual(noResults.attempts, [1]);
  });

  for (const rejection of [
    new BrokenCircuitError('open', undefined, undefined),
    new BulkheadRejectedError('full', 1, 0),
  ]) {
    it(`does not retry ${rejection.name} even when the classifier says so, unless allowed`, async () => {
      const options = { handle: { error: () => true }, backoff: immediateBackoff(), maxAttempts: 3 };
      const refused = await run(options, () => {
        throw rejection;
      });
      assert.equal(refused.error, rejection);
      assert.deepEqual(refused.attempts, [1]);
      const allowed = await run({ ...options, retryPolicyRejections: true }, () => {
        throw rejection;
      });
      assert.deepEqual(allowed.attempts, [1, 2, 3]);
    });
  }
});

describe('retry: Retry-After', () => {
  it('waits as long as Retry-After seconds ask when longer than the backoff', async () => {
    const r = await run({ backoff: constantBackoff(100) }, (attempt) => {
      if (attempt === 1) throw new HttpError(503, { 'retry-after': '3' });
      if (attempt === 2) throw new HttpError(503, { 'retry-after': '0' });
      return 'ok';
    });
    assert.equal(r.value, 'ok');
    assert.deepEqual(r.startedAt, [0, 3000, 3100]);
    assert.deepEqual(
      r.events.flatMap((e) => (e.type === 'retry' ? [e.reason] : [])),
      ['retry-after', 'backoff'],
    );
  });

  it('honours an HTTP date on a result, measured on the wall clock', async () => {
    const clock = new VirtualClock({ now: Date.UTC(2026, 0, 1, 12, 0, 0) });
    const policy = retry({ clock, backoff: constantBackoff(100) });
    const startedAt: number[] = [];
    const headers = new Headers({ 'Retry-After': new Date(Date.UTC(2026, 0, 1, 12, 0, 10)).toUTCString() });
    const call = policy.execute(({ attempt }) => {
      startedAt.push(clock.monotonic());
      return attempt === 1 ? { status: 429, headers } : { status: 200 };
    });
    await runToEnd(clock);
    assert.deepEqual(await call, { status: 200 });
    assert.deepEqual(startedAt, [0, 10_000]);
  });

  it('caps a Retry-After at maxRetryAfterMs, and ignores it when told to', async () => {
    const asksAnHour = (attempt: number) => {
      if (attempt === 1) throw new HttpError(503, { 'retry-after': '3600' });
      return 'ok';
    };
    const capped = await run({ backoff: constantBackoff(100), maxRetryAfterMs: 2000 }, asksAnHour);
    assert.deepEqual(capped.startedAt, [0, 2000]);
    const ignored = await run({ backoff: constantBackoff(100), honorRetryAfter: false }, asksAnHour);
    assert.deepEqual(ignored.startedAt, [0, 100]);
  });

  it('a Retry-After capped below the backoff never shortens the backoff wait', async () => {
    const r = await run({ backoff: constantBackoff(5000), maxRetryAfterMs: 1000 }, (attempt) => {
      if (attempt === 1) throw new HttpError(503, { 'retry-after': '10' });
      return 'ok';
    });
    assert.deepEqual(r.startedAt, [0, 5000]);
    assert.deepEqual(
      r.events.flatMap((e) => (e.type === 'retry' ? [e.reason] : [])),
      ['backoff'],
    );
  });
});

describe('retry: cancellation and deadlines', () => {
  it('an abort during a wait rejects at once and leaves no timer behind', async () => {
    const clock = new VirtualClock();
    const policy = retry({ clock, backoff: constantBackoff(1000) });
    const caller = new AbortController();
    let calls = 0;
    const call = policy.execute(
      () => {
        calls++;
        throw networkError();
      },
      { signal: caller.signal },
    );
    const settled = call.catch((error: unknown) => error);
    await clock.advance(10);
    assert.equal(clock.pendingTimers, 1);
    caller.abort('user left');
    await flushMicrotasks();
    const error = await settled;
    assert.ok(error instanceof OperationCancelledError);
    assert.equal(error.reason, 'user left');
    assert.equal(clock.pendingTimers, 0);
    assert.equal(calls, 1);
    assert.equal(clock.monotonic(), 10);
  });

  it('does not start when the caller already cancelled, and does not retry after a cancel during an attempt', async () => {
    const clock = new VirtualClock();
    const policy = retry({ clock, backoff: immediateBackoff() });
    let calls = 0;
    await assert.rejects(
      policy.execute(() => calls++, { signal: AbortSignal.abort() }),
      OperationCancelledError,
    );
    assert.equal(calls, 0);
    const caller = new AbortController();
    await assert.rejects(
      policy.execute(
        () => {
          calls++;
          caller.abort();
          throw networkError();
        },
        { signal: caller.signal },
      ),
      OperationCancelledError,
    );
    assert.equal(calls, 1);
  });

  it('hands the caller’s signal to every attempt', async () => {
    const clock = new VirtualClock();
    const policy = retry({ clock, backoff: immediateBackoff(), maxAttempts: 2 });
    const { signal } = new AbortController();
    const seen: AbortSignal[] = [];
    const fail = (context: ExecuteContext) => {
      seen.push(context.signal);
      throw networkError();
    };
    await assert.rejects(policy.execute(fail, { signal }));
    await assert.rejects(policy.execute(fail));
    assert.deepEqual(seen, [signal, signal, neverAbortedSignal, neverAbortedSignal]);
  });

  it('inside a timeout, gives up with the real failure instead of starting a wait past the deadline', async () => {
    const clock = new VirtualClock();
    const outer = timeout({ timeoutMs: 250, clock });
    const policy = retry({ clock, backoff: constantBackoff(100), maxAttempts: 10 });
    const events: RetryEvent[] = [];
    policy.events.on((event) => events.push(event));
    const startedAt: number[] = [];
    const last = new HttpError(503);
    const call = outer
      .execute((context) =>
        policy.execute(() => {
          startedAt.push(clock.monotonic());
          throw last;
        }, context),
      )
      .catch((error: unknown) => error);
    await runToEnd(clock);
    assert.equal(await call, last);
    assert.deepEqual(startedAt, [0, 100, 200]);
    const giveUp = events.at(-1);
    assert.ok(giveUp?.type === 'give-up' && giveUp.reason === 'deadline');
  });
});
