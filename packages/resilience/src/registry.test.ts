import assert from 'node:assert/strict';
import { EventEmitter as NodeEventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { assertInteger, EventEmitter, InvalidOptionsError, type StratusEvent } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker/index.js';
import { contextFor } from './context.js';
import { BrokenCircuitError, TimeoutError } from './errors.js';
import { pipeline } from './pipeline.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from './policy.js';
import {
  type PipelineBuilder,
  type PipelineConfig,
  PipelineNotFoundError,
  PipelineRegistry,
  type PipelineRegistryEvent,
  PipelineReloadError,
} from './registry.js';
import { timeout } from './timeout.js';

interface CountingOptions {
  /** A tag the calls return with, to tell pipelines apart. */
  tag: string;
  /** Must be an integer >= 1: lets a test feed invalid options. */
  weight: number;
}

interface CallEvent extends StratusEvent {
  readonly component: 'counting';
  readonly type: 'call';
  readonly tag: string;
}

/** A pass-through policy that validates its options, counts calls and emits one event per call. */
class CountingPolicy implements Policy<CallEvent> {
  readonly name = 'counting';
  readonly events = new EventEmitter<CallEvent>();
  calls = 0;

  constructor(readonly options: CountingOptions) {
    assertInteger('weight', options.weight, 1);
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    this.calls += this.options.weight;
    if (this.events.active) {
      this.events.emit({
        component: 'counting',
        name: this.name,
        type: 'call',
        at: 0,
        tag: this.options.tag,
      });
    }
    return Promise.resolve(operation(contextFor(options?.signal)));
  }
}

const counting: PipelineBuilder<CountingOptions, CallEvent> = (options) => new CountingPolicy(options);

function setup() {
  const clock = new VirtualClock();
  const registry = new PipelineRegistry({ clock, name: 'app' });
  const events: PipelineRegistryEvent[] = [];
  registry.events.on((event) => events.push(event));
  return { clock, registry, events };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

const currentPolicy = (registry: PipelineRegistry, name: string) =>
  registry.get(name).current as CountingPolicy;

describe('PipelineRegistry', () => {
  describe('define and get', () => {
    it('builds a pipeline and hands out one stable handle that runs calls on it', async () => {
      const { registry } = setup();
      const handle = registry.define('orders', counting, { tag: 'v1', weight: 1 });
      assert.equal(registry.get('orders'), handle);
      assert.equal(handle.name, 'orders');
      assert.equal(handle.version, 1);
      assert.deepEqual(handle.options, { tag: 'v1', weight: 1 });
      assert.equal(await handle.execute(async () => 42), 42);
      assert.equal(currentPolicy(registry, 'orders').calls, 1);
      assert.deepEqual(registry.names(), ['orders']);
      assert.equal(registry.has('orders'), true);
      assert.equal(registry.has('other'), false);
    });

    it('rejects unknown names, duplicate and empty names, non-function builders and non-policies', () => {
      const { registry } = setup();
      assert.throws(() => registry.get('nope'), PipelineNotFoundError);
      registry.define('a', counting, { tag: 'a', weight: 1 });
      assert.throws(() => registry.define('a', counting, { tag: 'a', weight: 1 }), {
        name: 'InvalidOptionsError',
        option: 'name',
      });
      assert.throws(() => registry.define('', counting, { tag: 'a', weight: 1 }), { option: 'name' });
      assert.throws(() => registry.define('b', 'x' as unknown as typeof counting, { tag: 'b', weight: 1 }), {
        option: 'builder',
      });
      const notAPolicy = (() => ({ execute: () => 1 })) as unknown as typeof counting;
      assert.throws(() => registry.define('c', notAPolicy, { tag: 'c', weight: 1 }), { option: 'builder' });
    });

    it('lets an invalid initial build throw and registers nothing', () => {
      const { registry } = setup();
      assert.throws(() => registry.define('a', counting, { tag: 'a', weight: 0 }), {
        name: 'InvalidOptionsError',
        option: 'weight',
      });
      assert.equal(registry.has('a'), false);
    });

    it('validates its own options', () => {
      assert.throws(() => new PipelineRegistry(null as unknown as object), InvalidOptionsError);
    });
  });

  describe('reconfigure', () => {
    it('swaps the new pipeline in: calls in flight finish on the old one, new calls use the new one', async () => {
      const { registry, events } = setup();
      const handle = registry.define('orders', counting, { tag: 'v1', weight: 1 });
      const old = currentPolicy(registry, 'orders');
      const gate = deferred<string>();
      const inFlight = handle.execute(() => gate.promise);

      assert.equal(handle.reconfigure({ tag: 'v2', weight: 1 }), 2);
      const fresh = currentPolicy(registry, 'orders');
      assert.notEqual(fresh, old);
      assert.equal(handle.version, 2);
      assert.deepEqual(handle.options, { tag: 'v2', weight: 1 });
      assert.deepEqual(events, [
        {
          component: 'pipeline-registry',
          type: 'reconfigured',
          name: 'orders',
          at: registry.clock.now(),
          version: 2,
          previousVersion: 1,
        },
      ]);

      assert.equal(await handle.execute(async () => 'new'), 'new');
      gate.resolve('old');
      assert.equal(await inFlight, 'old');
      assert.equal(old.calls, 1);
      assert.equal(fresh.calls, 1);
    });

    it('keeps the old pipeline when the new options are invalid, and says why', async () => {
      const { registry, events } = setup();
      const handle = registry.define('orders', counting, { tag: 'v1', weight: 1 });
      const old = handle.current;
      assert.throws(
        () => registry.reconfigure('orders', { tag: 'v2', weight: -3 }),
        (error) =>
          error instanceof PipelineReloadError &&
          error.cause instanceof InvalidOptionsError &&
          error.failures.get('orders') === error.cause &&
          /"orders": Invalid option "weight"/.test(error.message),
      );
      assert.equal(handle.current, old);
      assert.equal(handle.version, 1);
      assert.deepEqual(handle.options, { tag: 'v1', weight: 1 });
      assert.equal(events.length, 1);
      const [failed] = events;
      assert.equal(failed?.type, 'reconfigure-failed');
      assert.equal(failed?.type === 'reconfigure-failed' && failed.version, 1);
      assert.equal(await handle.execute(async () => 1), 1);
      assert.throws(() => registry.reconfigure('missing', {}), PipelineNotFoundError);
    });

    it('moves listeners of the handle to the new pipeline', async () => {
      const { registry } = setup();
      const handle = registry.define('orders', counting, { tag: 'v1', weight: 1 });
      const old = handle.current;
      const tags: string[] = [];
      const off = handle.events.on((event) => tags.push(event.tag));
      await handle.execute(() => 1);
      handle.reconfigure({ tag: 'v2', weight: 1 });
      assert.equal(old.events.active, false);
      await handle.execute(() => 1);
      await old.execute(() => 1);
      assert.deepEqual(tags, ['v1', 'v2']);
      off();
      assert.equal(handle.events.active, false);
    });
  });

  describe('carry', () => {
    it('hands each build what the previous successful build kept, and forgets what a failed build made', () => {
      const { registry } = setup();
      const seen: (string | undefined)[] = [];
      const builder: PipelineBuilder<CountingOptions, CallEvent> = (options, context) => {
        context.carry<string>('state', (previous) => {
          seen.push(previous);
          return `${options.tag}@${context.version}`;
        });
        return new CountingPolicy(options);
      };
      registry.define('p', builder, { tag: 'a', weight: 1 });
      registry.reconfigure('p', { tag: 'b', weight: 1 });
      assert.throws(() => registry.reconfigure('p', { tag: 'c', weight: 0 }), PipelineReloadError);
      registry.reconfigure('p', { tag: 'd', weight: 1 });
      assert.deepEqual(seen, [undefined, 'a@1', 'b@2', 'b@2']);
    });

    it('tells the builder the previous options and refuses a key used twice in one build', () => {
      const { registry } = setup();
      const previous: unknown[] = [];
      registry.define(
        'p',
        (options: CountingOptions, context) => {
          previous.push(context.previousOptions);
          if (options.tag === 'twice') {
            context.carry('k', () => 1);
            context.carry('k', () => 2);
          }
          return new CountingPolicy(options);
        },
        { tag: 'a', weight: 1 },
      );
      registry.reconfigure('p', { tag: 'b', weight: 1 });
      assert.deepEqual(previous, [undefined, { tag: 'a', weight: 1 }]);
      assert.throws(
        () => registry.reconfigure('p', { tag: 'twice', weight: 1 }),
        (error) =>
          error instanceof PipelineReloadError && (error.cause as InvalidOptionsError).option === 'carry',
      );
    });
  });

  describe('reload', () => {
    it('rebuilds only the pipelines whose options changed', () => {
      const { registry, events } = setup();
      registry.define('a', counting, { tag: 'a', weight: 1 });
      registry.define('b', counting, { tag: 'b', weight: 1 });
      assert.deepEqual(registry.reload({ a: { tag: 'a', weight: 1 }, b: { tag: 'b2', weight: 1 } }), ['b']);
      assert.equal(registry.get('a').version, 1);
      assert.equal(registry.get('b').version, 2);
      assert.deepEqual(registry.reload({ a: { tag: 'a', weight: 1 } }), []);
      assert.equal(events.length, 1);
    });

    it('is all or nothing: one invalid or unknown pipeline and none is swapped', () => {
      const { registry, events } = setup();
      registry.define('a', counting, { tag: 'a', weight: 1 });
      registry.define('b', counting, { tag: 'b', weight: 1 });
      assert.throws(
        () => registry.reload({ a: { tag: 'a2', weight: 1 }, b: { tag: 'b2', weight: 0 }, c: {} }),
        (error) =>
          error instanceof PipelineReloadError &&
          [...error.failures.keys()].join() === 'b,c' &&
          error.failures.get('c') instanceof PipelineNotFoundError &&
          error.cause === undefined,
      );
      assert.equal(registry.get('a').version, 1);
      assert.equal(registry.get('b').version, 1);
      assert.deepEqual(
        events.map((e) => `${e.type}:${e.name}:${'version' in e ? e.version : ''}`),
        ['reconfigure-failed:b:1', 'reconfigure-failed:c:0'],
      );
      assert.throws(() => registry.reload(null as unknown as PipelineConfig), { option: 'config' });
    });
  });

  describe('watch', () => {
    it('polls a source on the clock and applies each configuration it returns', async () => {
      const { clock, registry, events } = setup();
      registry.define('a', counting, { tag: 'v1', weight: 1 });
      const configs: (PipelineConfig | Error)[] = [
        { a: { tag: 'v1', weight: 1 } },
        { a: { tag: 'v2', weight: 1 } },
        new Error('source down'),
        { a: { tag: 'bad', weight: 0 } },
        { a: { tag: 'v3', weight: 1 } },
      ];
      let loads = 0;
      const stop = registry.watch({
        intervalMs: 1000,
        load: async () => {
          const next = configs[loads++]!;
          if (next instanceof Error) throw next;
          return next;
        },
      });
      await clock.advance(0);
      assert.equal(loads, 1);
      assert.equal(registry.get('a').version, 1);
      await clock.advance(999);
      assert.equal(loads, 1);
      await clock.advance(1);
      assert.deepEqual(registry.get('a').options, { tag: 'v2', weight: 1 });
      await clock.advance(3000);
      assert.equal(loads, 5);
      assert.deepEqual(registry.get('a').options, { tag: 'v3', weight: 1 });
      assert.deepEqual(
        events.map((e) => `${e.type}:${e.name}`),
        ['reconfigured:a', 'source-failed:app', 'reconfigure-failed:a', 'reconfigured:a'],
      );
      stop();
      assert.equal(clock.pendingTimers, 0);
      await clock.advance(10_000);
      assert.equal(loads, 5);
    });

    it('does not apply a load that completes after stop', async () => {
      const { clock, registry } = setup();
      registry.define('a', counting, { tag: 'v1', weight: 1 });
      const gate = deferred<PipelineConfig>();
      const stop = registry.watch({ intervalMs: 1000, load: () => gate.promise });
      stop();
      gate.resolve({ a: { tag: 'late', weight: 1 } });
      await clock.advance(5000);
      assert.equal(registry.get('a').version, 1);
      assert.equal(clock.pendingTimers, 0);
    });

    it('applies configurations pushed by an event emitter until unsubscribed', () => {
      const { registry, events } = setup();
      registry.define('a', counting, { tag: 'v1', weight: 1 });
      const emitter = new NodeEventEmitter();
      const stop = registry.watch({ emitter, event: 'config' });
      emitter.emit('config', { a: { tag: 'v2', weight: 1 } });
      assert.equal(registry.get('a').version, 2);
      emitter.emit('config', 'not an object');
      emitter.emit('config', { a: { tag: 'v3', weight: -1 } });
      assert.equal(registry.get('a').version, 2);
      assert.deepEqual(
        events.map((e) => e.type),
        ['reconfigured', 'source-failed', 'reconfigure-failed'],
      );
      stop();
      assert.equal(emitter.listenerCount('config'), 0);
      emitter.emit('config', { a: { tag: 'v4', weight: 1 } });
      assert.equal(registry.get('a').version, 2);
    });

    it('validates the source', () => {
      const { registry } = setup();
      assert.throws(() => registry.watch({ intervalMs: 0, load: () => ({}) }), {
        option: 'source.intervalMs',
      });
      assert.throws(() => registry.watch({ intervalMs: 10 } as never), { option: 'source.load' });
      assert.throws(() => registry.watch(null as never), { option: 'source' });
      assert.throws(() => registry.watch({ emitter: null } as never), { option: 'source.emitter' });
      assert.throws(() => registry.watch({ emitter: { on() {} } } as never), {
        option: 'source.emitter.off',
      });
    });
  });

  describe('with real policies', () => {
    interface ServiceOptions {
      timeoutMs: number;
      failures: number;
    }

    it('rebuilds timeout and breaker from new options while the breaker keeps its state', async () => {
      const { clock, registry } = setup();
      const breakers: CircuitBreakerPolicy[] = [];
      const handle = registry.define(
        'service',
        (options: ServiceOptions, context) => {
          const breaker = context.carry<CircuitBreakerPolicy>('breaker', (previous) =>
            circuitBreaker({
              clock,
              openMs: 1000,
              trip: { kind: 'consecutive-failures', failures: options.failures },
              initialState: previous?.exportState(),
            }),
          );
          breakers.push(breaker);
          return pipeline(breaker, timeout({ timeoutMs: options.timeoutMs, clock }));
        },
        { timeoutMs: 100, failures: 1 },
      );
      const hang = ({ signal }: ExecuteContext) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      const failed = assert.rejects(handle.execute(hang), TimeoutError);
      await clock.advance(100);
      await failed;
      assert.equal(breakers[0]?.state, 'open');

      handle.reconfigure({ timeoutMs: 50, failures: 3 });
      assert.equal(breakers[1]?.state, 'open');
      await assert.rejects(
        handle.execute(async () => 'x'),
        BrokenCircuitError,
      );

      assert.throws(() => handle.reconfigure({ timeoutMs: -1, failures: 3 }), PipelineReloadError);
      await clock.advance(1000);
      assert.equal(await handle.execute(async () => 'back'), 'back');
      assert.equal(breakers[1]?.state, 'closed');
      assert.equal(handle.version, 2);
    });
  });
});
