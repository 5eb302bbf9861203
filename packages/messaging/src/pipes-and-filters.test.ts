import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { MessageBackend } from './backend.js';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import { FILTER_MARK_PREFIX, filterOutputId, Pipeline } from './pipes-and-filters.js';

const T0 = Date.UTC(2026, 0, 1);

interface Doc {
  text: string;
  trail: string[];
}

const step = (name: string) => ({
  name,
  transform: (doc: unknown) => ({ ...(doc as Doc), trail: [...(doc as Doc).trail, name] }),
});

describe('Pipes and Filters', () => {
  it('validates steps', () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    assert.throws(() => new Pipeline(messaging, 'p', []), InvalidOptionsError);
    assert.throws(() => new Pipeline(messaging, 'p', [step('a'), step('a')]), /unique/);
    assert.throws(() => new Pipeline(messaging, 'p', [{ name: 'bad name', transform: () => 1 }]), {
      option: 'step.name',
    });
    assert.throws(() => new Pipeline(messaging, 'p', [step('a')]).startStep('zzz'), { option: 'name' });
  });

  it('passes a message through every filter in order, each marking it', async () => {
    const clock = new VirtualClock({ now: T0 });
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
    const results: {
      doc: Doc;
      headers: Readonly<Record<string, string>>;
      correlationId: string | undefined;
    }[] = [];
    const pipeline = new Pipeline(messaging, 'docs', [
      step('a'),
      step('b'),
      {
        name: 'final',
        transform: (doc, message) => {
          results.push({ doc: doc as Doc, headers: message.headers, correlationId: message.correlationId });
          return undefined;
        },
      },
    ]);
    await pipeline.createQueues();
    const consumers = pipeline.startAll();
    const { id } = await messaging.queue(pipeline.input).send({ text: 'hello', trail: [] });
    await waitUntil(() => results.length === 1, 'the message reached the final receiver');
    await Promise.all(consumers.map((consumer) => consumer.close()));
    assert.deepEqual(results[0]?.doc, { text: 'hello', trail: ['a', 'b'] });
    assert.equal(results[0]?.headers[`${FILTER_MARK_PREFIX}a`], 'complete');
    assert.equal(results[0]?.headers[`${FILTER_MARK_PREFIX}b`], 'complete');
    assert.equal(results[0]?.correlationId, id, 'the original id travels as the correlation id');
  });

  it('reorders filters by configuration', async () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), retry: false });
    const trails: string[][] = [];
    const pipeline = new Pipeline(messaging, 'reordered', [
      step('b'),
      step('a'),
      {
        name: 'final',
        transform: (doc) => {
          trails.push((doc as Doc).trail);
          return undefined;
        },
      },
    ]);
    await pipeline.createQueues();
    const consumers = pipeline.startAll();
    await messaging.queue(pipeline.input).send({ text: 'x', trail: [] });
    await waitUntil(() => trails.length === 1, 'done');
    await Promise.all(consumers.map((consumer) => consumer.close()));
    assert.deepEqual(trails, [['b', 'a']]);
  });

  it('a filter that crashes after sending but before completing produces one logical message downstream', async () => {
    const inner = new MemoryMessageBackend();
    let failCompletes = 1;
    // The first complete of step a's input "crashes": the input comes back and step a runs again.
    const backend = new Proxy(inner, {
      get(target, property) {
        if (property === 'complete') {
          return async (...args: Parameters<MessageBackend['complete']>) => {
            if (args[0] === 'crashy.a' && failCompletes-- > 0) throw new Error('killed before completing');
            return target.complete(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const clock = new VirtualClock({ now: T0 });
    const messaging = new Messaging({ backend, clock, retry: false });
    let runsOfA = 0;
    const finals: Doc[] = [];
    const pipeline = new Pipeline(messaging, 'crashy', [
      {
        name: 'a',
        transform: (doc) => {
          runsOfA++;
          return { ...(doc as Doc), trail: ['a'] };
        },
      },
      {
        name: 'final',
        transform: (doc) => {
          finals.push(doc as Doc);
          return undefined;
        },
      },
    ]);
    await pipeline.createQueues({ lockDurationMs: 1000 });
    const consumers = pipeline.startAll({ a: { idlePollMs: 100 } });
    await messaging.queue(pipeline.input).send({ text: 'once', trail: [] });
    await waitUntil(() => finals.length === 1, 'the first copy arrived');
    for (let i = 0; i < 50 && runsOfA < 2; i++) await clock.advance(1000);
    await waitUntil(
      async () => (await messaging.queue('crashy.a').stats()).length === 0,
      'step a completed its input',
    );
    await clock.advance(1000);
    await Promise.all(consumers.map((consumer) => consumer.close()));
    assert.equal(runsOfA, 2, 'step a ran twice for the one input');
    assert.equal(finals.length, 1, 'downstream saw it once');
  });

  it('output ids are deterministic per step and input', () => {
    assert.equal(filterOutputId('a', 'm-1'), filterOutputId('a', 'm-1'));
    assert.notEqual(filterOutputId('a', 'm-1'), filterOutputId('b', 'm-1'));
    assert.notEqual(filterOutputId('a', 'm-1'), filterOutputId('a', 'm-2'));
  });
});
