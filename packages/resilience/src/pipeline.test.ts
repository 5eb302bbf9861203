import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  constantBackoff,
  EventEmitter,
  isCancelled,
  OperationCancelledError,
  remainingMs,
  type StratusEvent,
} from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { circuitBreaker } from './circuit-breaker/index.js';
import { contextFor } from './context.js';
import { BrokenCircuitError, TimeoutError } from './errors.js';
import { pipeline } from './pipeline.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from './policy.js';
import { retry } from './retry.js';
import { timeout } from './timeout.js';

interface TraceEvent extends StratusEvent {
  readonly component: 'trace';
  readonly type: 'enter';
}

/** Records entering and leaving in a shared log and the signal it was called with; emits 'enter'. */
class TracePolicy implements Policy<TraceEvent> {
  readonly events = new EventEmitter<TraceEvent>();
  callerSignal: AbortSignal | undefined;

  constructor(
    readonly name: string,
    readonly log: string[] = [],
  ) {}

  async execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    this.callerSignal = options?.signal;
    this.log.push(`>${this.name}`);
    if (this.events.active) this.events.emit({ component: 'trace', name: this.name, type: 'enter', at: 0 });
    try {
      return await operation(contextFor(options?.signal));
    } finally {
      this.log.push(`<${this.name}`);
    }
  }
}

/** Hands its operation its own signal, so a test can abort "from inside" the pipeline. */
class SignalPolicy implements Policy {
  readonly name = 'signal';
  readonly events = new EventEmitter();
  readonly controller = new AbortController();

  execute<T>(operation: Operation<T>): Promise<T> {
    return Promise.resolve(operation({ signal: this.controller.signal, attempt: 1 }));
  }
}

/** A minimal retry: runs the operation up to `attempts` times with attempt numbers 1..n. */
class AttemptsPolicy implements Policy {
  readonly events = new EventEmitter();

  constructor(
    readonly attempts: number,
    readonly name = 'attempts',
  ) {}

  async execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const signal = contextFor(options?.signal).signal;
    for (let attempt = 1; ; attempt++) {
      try {
        return await operation({ signal, attempt });
      } catch (error) {
        if (attempt >= this.attempts) throw error;
      }
    }
  }
}

describe('pipeline', () => {
  it('runs the first policy outermost and returns the operation value with its type', async () => {
    const log: string[] = [];
    const p = pipeline(new TracePolicy('a', log), new TracePolicy('b', log), new TracePolicy('c', log));
    const value: number = await p.execute(() => {
      log.push('op');
      return 42;
    });
    assert.equal(value, 42);
    assert.deepEqual(log, ['>a', '>b', '>c', 'op', '<c', '<b', '<a']);
    const text: string = await p.execute(async () => 'text');
    assert.equal(text, 'text');
  });

  it('flattens nested pipelines', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => new TracePolicy(n));
    const p = pipeline(a!, pipeline(b!, pipeline(c!)), d!);
    assert.deepEqual(p.policies, [a, b, c, d]);
  });

  it('hands the caller signal to the outermost policy and each context signal to the next layer', async () => {
    const outer = new TracePolicy('outer');
    const source = new SignalPolicy();
    const inner = new TracePolicy('inner');
    const caller = new AbortController();
    let seen: AbortSignal | undefined;
    await pipeline(outer, source, inner).execute(
      ({ signal }) => {
        seen = signal;
      },
      { signal: caller.signal },
    );
    assert.equal(outer.callerSignal, caller.signal);
    assert.equal(inner.callerSignal, source.controller.signal);
    assert.equal(seen, source.controller.signal);
  });

  it('gives inner layers no signal when the caller had none', async () => {
    const inner = new TracePolicy('inner');
    await pipeline(new TracePolicy('outer'), inner).execute(() => 1);
    assert.equal(inner.callerSignal, undefined);
  });

  it('keeps a retry attempt number visible through the policies inside it', async () => {
    const seen: number[] = [];
    const p = pipeline(new AttemptsPolicy(3), new TracePolicy('b'), new TracePolicy('c'));
    await assert.rejects(
      p.execute(({ attempt }) => {
        seen.push(attempt);
        throw new Error(`attempt ${attempt}`);
      }),
      { message: 'attempt 3' },
    );
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('shows the innermost attempt other than 1 when retries nest, and keeps the inner signal', async () => {
    const seen: string[] = [];
    const source = new SignalPolicy();
    const p = pipeline(new AttemptsPolicy(2, 'outer'), source, new AttemptsPolicy(2, 'inner'));
    let signal: AbortSignal | undefined;
    await assert.rejects(
      p.execute((context: ExecuteContext) => {
        seen.push(String(context.attempt));
        signal = context.signal;
        throw new Error('no');
      }),
    );
    // Outer attempt 1 runs inner attempts 1 and 2; outer attempt 2 shows 2 until the inner retry says 2.
    assert.deepEqual(seen, ['1', '2', '2', '2']);
    assert.equal(signal, source.controller.signal);
  });

  it('shows an outer attempt on a context that defers cancellation and deadline to the inner one', async () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    await assert.rejects(
      pipeline(new AttemptsPolicy(2), timeout({ timeoutMs: 100, clock })).execute((context) => {
        seen.push(`${context.attempt}:${isCancelled(context)}:${remainingMs(context)}`);
        throw new Error('again');
      }),
    );
    assert.deepEqual(seen, ['1:false:100', '2:false:100']);
  });

  it('turns a synchronous throw into a rejection', async () => {
    const failure = new Error('sync');
    const p = pipeline(new TracePolicy('a'), new TracePolicy('b'));
    await assert.rejects(
      p.execute(() => {
        throw failure;
      }),
      (error) => error === failure,
    );
  });

  describe('empty', () => {
    it('is a pass-through with the caller signal and attempt 1', async () => {
      const caller = new AbortController();
      const p = pipeline();
      assert.deepEqual(p.policies, []);
      assert.equal(p.events.active, false);
      const context = await p.execute((c) => c, { signal: caller.signal });
      assert.equal(context.signal, caller.signal);
      assert.equal(context.attempt, 1);
      assert.equal(await p.execute(async () => 'x'), 'x');
    });

    it('hands a context given as options on as it is, keeping its attempt', async () => {
      const seen: number[] = [];
      await pipeline(new AttemptsPolicy(1)).execute((outer) =>
        pipeline().execute((context) => {
          assert.equal(context, outer);
          seen.push(context.attempt);
        }, outer),
      );
      assert.deepEqual(seen, [1]);
    });

    it('honours an aborted caller signal and rejects synchronous throws', async () => {
      const caller = new AbortController();
      caller.abort('stop');
      let ran = false;
      await assert.rejects(
        pipeline().execute(
          () => {
            ran = true;
          },
          { signal: caller.signal },
        ),
        (error) => error instanceof OperationCancelledError && error.reason === 'stop',
      );
      assert.equal(ran, false);
      await assert.rejects(
        pipeline().execute(() => {
          throw new Error('sync');
        }),
        { message: 'sync' },
      );
    });
  });

  describe('events', () => {
    it('relays the events of every policy while someone listens, once per policy', async () => {
      const a = new TracePolicy('a');
      const b = new TracePolicy('b');
      const p = pipeline(a, b, a);
      assert.equal(p.events.active, false);
      const seen: string[] = [];
      const off = p.events.on((event) => seen.push(event.name));
      assert.equal(p.events.active, true);
      assert.equal(a.events.active, true);
      await p.execute(() => 1);
      assert.deepEqual(seen, ['a', 'b', 'a']);
      off();
      off();
      assert.equal(a.events.active, false);
      await p.execute(() => 1);
      assert.deepEqual(seen, ['a', 'b', 'a']);
    });

    it('resolves once() with the first matching inner event', async () => {
      const p = pipeline(new TracePolicy('a'), new TracePolicy('b'));
      const next = p.events.once((event) => event.name === 'b');
      await p.execute(() => 1);
      assert.equal((await next).name, 'b');
    });
  });

  describe('with real policies', () => {
    it('composes timeout + retry + breaker + timeout: attempts reach the operation, the breaker counts each', async () => {
      const clock = new VirtualClock();
      const breaker = circuitBreaker({ clock, trip: { kind: 'consecutive-failures', failures: 5 } });
      const failures: string[] = [];
      breaker.events.on((event) => {
        if (event.type === 'failure') failures.push((event.failure as Error).name);
      });
      const p = pipeline(
        timeout({ timeoutMs: 500, clock }),
        retry({ clock, maxAttempts: 3, backoff: constantBackoff(10), handle: { error: () => true } }),
        breaker,
        timeout({ timeoutMs: 100, clock }),
      );
      const attempts: number[] = [];
      const call = p.execute((context) => {
        attempts.push(context.attempt);
        if (context.attempt === 3) return 'third time lucky';
        return new Promise<string>((_, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason)),
        );
      });
      await clock.advance(220);
      assert.equal(await call, 'third time lucky');
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.deepEqual(failures, ['TimeoutError', 'TimeoutError']);
      assert.equal(breaker.state, 'closed');
    });

    it('times out each attempt, counts timeouts on the breaker and fails fast once it opens', async () => {
      const clock = new VirtualClock();
      const breaker = circuitBreaker({
        clock,
        trip: { kind: 'consecutive-failures', failures: 2 },
        openMs: 1000,
      });
      const p = pipeline(timeout({ timeoutMs: 500, clock }), breaker, timeout({ timeoutMs: 100, clock }));
      const hang = ({ signal }: ExecuteContext) =>
        new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      for (let i = 0; i < 2; i++) {
        const failed = assert.rejects(p.execute(hang), TimeoutError);
        await clock.advance(100);
        await failed;
      }
      assert.equal(breaker.state, 'open');
      await assert.rejects(p.execute(hang), BrokenCircuitError);
      await clock.advance(1000);
      assert.equal(await p.execute(async () => 'ok'), 'ok');
      assert.equal(breaker.state, 'closed');
    });

    it('lets the outer timeout cut short everything inside it', async () => {
      const clock = new VirtualClock();
      const p = pipeline(
        timeout({ timeoutMs: 50, clock }),
        new TracePolicy('t'),
        timeout({ timeoutMs: 100, clock }),
      );
      let signal: AbortSignal | undefined;
      const call = p.execute((context) => {
        signal = context.signal;
        return new Promise<never>((_, reject) =>
          context.signal.addEventListener('abort', () => reject('aborted')),
        );
      });
      const failed = assert.rejects(call, (error) => error instanceof TimeoutError && error.timeoutMs === 50);
      await clock.advance(50);
      await failed;
      assert.equal(signal?.aborted, true);
    });
  });
});
