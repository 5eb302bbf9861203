import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, describe, it } from 'node:test';
import {
  type Context,
  type ContextManager,
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { type DataPoint, MeterProvider, type MetricData, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { constantBackoff, EventEmitter, OperationCancelledError, type StratusEvent } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { circuitBreaker } from '../circuit-breaker/index.js';
import { pipeline } from '../pipeline.js';
import { retry } from '../retry.js';
import { instrumentOpenTelemetry, traced } from './opentelemetry.js';

/** Active spans follow async calls, as with the Node SDK's AsyncLocalStorage context manager. */
class AsyncContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    active: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(active, () => fn.apply(thisArg, args));
  }

  bind<T>(active: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]) =>
      this.with(active, target as (...a: unknown[]) => unknown, undefined, ...args);
    return run as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#storage.disable();
    return this;
  }
}

context.setGlobalContextManager(new AsyncContextManager());
after(() => context.disable());

/** A reader the test collects from on demand. */
class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

function setup(options: { spanEvents?: boolean; metricAttribute?: (field: string) => boolean } = {}) {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const instrumentation = instrumentOpenTelemetry({ meterProvider, tracerProvider, ...options });
  const metric = async (name: string): Promise<MetricData | undefined> => {
    const { resourceMetrics } = await reader.collect();
    for (const scope of resourceMetrics.scopeMetrics) {
      const found = scope.metrics.find((m) => m.descriptor.name === name);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  /** Data points as `attribute=value,...` strings mapped to their values, for compact assertions. */
  const points = async (name: string): Promise<Record<string, unknown>> => {
    const data = await metric(name);
    const out: Record<string, unknown> = {};
    for (const point of (data?.dataPoints ?? []) as DataPoint<unknown>[]) {
      const label = Object.entries(point.attributes)
        .map(([k, v]) => `${k.replace('stratus.', '')}=${String(v)}`)
        .join(',');
      out[label] = point.value;
    }
    return out;
  };
  return { instrumentation, exporter, tracerProvider, points };
}

function openingBreaker(clock: VirtualClock) {
  return circuitBreaker({
    clock,
    name: 'payments',
    openMs: 1000,
    trip: { kind: 'consecutive-failures', failures: 1 },
  });
}

describe('instrumentOpenTelemetry', () => {
  it('counts every event by component, name, type and its bounded fields', async () => {
    const { instrumentation, points } = setup();
    const clock = new VirtualClock();
    const breaker = openingBreaker(clock);
    await breaker.execute(async () => 'ok');
    await assert.rejects(breaker.execute(() => Promise.reject(new Error('down'))));
    await assert.rejects(breaker.execute(async () => 'refused'));
    new EventEmitter<StratusEvent & { key: string; partition: string; hot: boolean }>().emit({
      component: 'rate-limiter',
      name: 'api',
      type: 'limited',
      at: 0,
      key: 'tenant-42',
      partition: 'p',
      hot: true,
    });
    instrumentation.dispose();
    assert.deepEqual(await points('stratus.resilience.events'), {
      'component=circuit-breaker,name=payments,event=success,state=closed': 1,
      'component=circuit-breaker,name=payments,event=failure,state=closed': 1,
      'component=circuit-breaker,name=payments,event=state-change,from=closed,to=open,reason=trip-rule': 1,
      'component=circuit-breaker,name=payments,event=rejected,state=open': 1,
      'component=rate-limiter,name=api,event=limited,hot=true': 1,
    });
  });

  it('takes metric attributes from a custom filter', async () => {
    const { instrumentation, points } = setup({ metricAttribute: (field) => field === 'key' });
    new EventEmitter<StratusEvent & { key: string; reason: string }>().emit({
      component: 'rate-limiter',
      name: 'api',
      type: 'limited',
      at: 0,
      key: 'k',
      reason: 'r',
    });
    instrumentation.dispose();
    assert.deepEqual(await points('stratus.resilience.events'), {
      'component=rate-limiter,name=api,event=limited,key=k': 1,
    });
  });

  it('records duration fields (*Ms) in histograms named after them', async () => {
    const { instrumentation, points } = setup();
    const events = new EventEmitter<
      StratusEvent & { delayMs?: number; retryAfterMs?: number; attempt: number }
    >();
    events.emit({ component: 'retry', name: 'r', type: 'retry', at: 0, delayMs: 100, attempt: 1 });
    events.emit({ component: 'retry', name: 'r', type: 'retry', at: 0, delayMs: 300, attempt: 2 });
    events.emit({
      component: 'rate-limiter',
      name: 'l',
      type: 'limited',
      at: 0,
      retryAfterMs: 50,
      attempt: 1,
    });
    instrumentation.dispose();
    const delay = (await points('stratus.resilience.delay'))['component=retry,name=r,event=retry'] as {
      count: number;
      sum: number;
    };
    assert.equal(delay.count, 2);
    assert.equal(delay.sum, 400);
    const retryAfter = await points('stratus.resilience.retry_after');
    assert.equal((retryAfter['component=rate-limiter,name=l,event=limited'] as { sum: number }).sum, 50);
  });

  it('reports breaker state as a gauge: 1 for the current state, 0 for states left', async () => {
    const { instrumentation, points } = setup();
    const clock = new VirtualClock();
    const breaker = openingBreaker(clock);
    await assert.rejects(breaker.execute(() => Promise.reject(new Error('down'))));
    assert.deepEqual(await points('stratus.resilience.state'), {
      'component=circuit-breaker,name=payments,state=closed': 0,
      'component=circuit-breaker,name=payments,state=open': 1,
    });
    await clock.advance(1000);
    await breaker.execute(async () => 'ok');
    assert.deepEqual(await points('stratus.resilience.state'), {
      'component=circuit-breaker,name=payments,state=closed': 1,
      'component=circuit-breaker,name=payments,state=open': 0,
      'component=circuit-breaker,name=payments,state=half-open': 0,
    });
    instrumentation.dispose();
    await assert.rejects(breaker.execute(() => Promise.reject(new Error('down again'))));
    assert.equal(breaker.state, 'open');
    assert.equal(
      (await points('stratus.resilience.state'))['component=circuit-breaker,name=payments,state=open'],
      0,
      'no longer observed after dispose',
    );
  });

  it('stops counting at dispose', async () => {
    const { instrumentation, points } = setup();
    const events = new EventEmitter<StratusEvent>();
    events.emit({ component: 'c', name: 'n', type: 'before', at: 0 });
    instrumentation.dispose();
    events.emit({ component: 'c', name: 'n', type: 'after', at: 0 });
    assert.deepEqual(await points('stratus.resilience.events'), { 'component=c,name=n,event=before': 1 });
  });
});

describe('traced', () => {
  it('runs the call in an active span that collects the events of the policies inside it', async () => {
    const { instrumentation, exporter } = setup();
    const clock = new VirtualClock();
    const policy = pipeline(
      instrumentation.traced('charge card', { attributes: { 'app.order': 'o-1' }, kind: SpanKind.CLIENT }),
      retry({
        clock,
        name: 'charge',
        maxAttempts: 3,
        backoff: constantBackoff(10),
        handle: { error: () => true },
      }),
    );
    let attempts = 0;
    const call = policy.execute(async () => {
      if (++attempts < 2) throw Object.assign(new Error('flaky'), { code: 'ECONNRESET' });
      return 'charged';
    });
    await clock.advance(10);
    assert.equal(await call, 'charged');
    instrumentation.dispose();

    const [span] = exporter.getFinishedSpans();
    assert.equal(span?.name, 'charge card');
    assert.equal(span?.kind, SpanKind.CLIENT);
    assert.equal(span?.attributes['app.order'], 'o-1');
    assert.equal(span?.status.code, SpanStatusCode.UNSET);
    const retryEvent = span?.events.find((e) => e.name === 'stratus.retry.retry');
    assert.deepEqual(retryEvent?.attributes, {
      'stratus.component': 'retry',
      'stratus.name': 'charge',
      'stratus.event': 'retry',
      'stratus.attempt': 1,
      'stratus.delayMs': 10,
      'stratus.cause.error.type': 'Error',
      'stratus.cause.error.message': 'flaky',
      'stratus.cause.error.code': 'ECONNRESET',
      'stratus.reason': 'backoff',
    });
    assert.deepEqual(
      span?.events.map((e) => e.name),
      ['stratus.retry.retry', 'stratus.retry.success'],
    );
  });

  it('records a failure as an exception and an error status', async () => {
    const { exporter, tracerProvider, instrumentation } = setup();
    const policy = traced('lookup', { tracerProvider });
    await assert.rejects(
      policy.execute(() => Promise.reject(new RangeError('no such user'))),
      RangeError,
    );
    await assert.rejects(
      policy.execute(() => {
        throw 'plain string';
      }),
    );
    instrumentation.dispose();
    const [first, second] = exporter.getFinishedSpans();
    assert.deepEqual(first?.status, { code: SpanStatusCode.ERROR, message: 'no such user' });
    assert.equal(first?.events[0]?.name, 'exception');
    assert.equal(first?.events[0]?.attributes?.['exception.type'], 'RangeError');
    assert.deepEqual(second?.status, { code: SpanStatusCode.ERROR, message: 'plain string' });
  });

  it('makes one span per attempt inside a retry, marked with the attempt number', async () => {
    const { exporter, tracerProvider, instrumentation } = setup({ spanEvents: false });
    const clock = new VirtualClock();
    const policy = pipeline(
      retry({ clock, maxAttempts: 2, backoff: constantBackoff(0), handle: { error: () => true } }),
      traced('attempt', { tracerProvider }),
    );
    let attempts = 0;
    assert.equal(
      await policy.execute(async () => (++attempts === 2 ? 'ok' : Promise.reject(new Error('x')))),
      'ok',
    );
    instrumentation.dispose();
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(
      spans.map((s) => [s.attributes['stratus.attempt'], s.status.code, s.events.length]),
      [
        [undefined, SpanStatusCode.ERROR, 1],
        [2, SpanStatusCode.UNSET, 0],
      ],
    );
  });

  it('adds no span event when no span is active', async () => {
    const { exporter, instrumentation } = setup();
    const clock = new VirtualClock();
    await assert.rejects(openingBreaker(clock).execute(() => Promise.reject(new Error('down'))));
    assert.equal(trace.getActiveSpan(), undefined);
    instrumentation.dispose();
    assert.equal(exporter.getFinishedSpans().length, 0);
  });

  it('rejects a cancelled caller without starting a span, and validates its options', async () => {
    const { exporter, tracerProvider, instrumentation } = setup();
    const caller = new AbortController();
    caller.abort('stop');
    await assert.rejects(
      traced('x', { tracerProvider }).execute(() => 1, { signal: caller.signal }),
      OperationCancelledError,
    );
    instrumentation.dispose();
    assert.equal(exporter.getFinishedSpans().length, 0);
    assert.throws(() => traced(''), { name: 'InvalidOptionsError', option: 'spanName' });
    assert.throws(() => traced('x', { attributes: 3 as never }), { option: 'attributes' });
    assert.throws(() => instrumentOpenTelemetry({ metricAttribute: 'key' as never }), {
      option: 'metricAttribute',
    });
  });
});
