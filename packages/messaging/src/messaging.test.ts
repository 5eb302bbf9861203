import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { MessageBackend } from './backend.js';
import {
  InvalidMessageError,
  MessageAlreadySettledError,
  MessageLockLostError,
  MessageTooLargeError,
  UnknownQueueError,
  UnknownTopicError,
} from './errors.js';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import { DEAD_LETTER_UNDECODABLE } from './queue-client.js';

const T0 = Date.UTC(2026, 0, 1);

function setup(backend: MessageBackend = new MemoryMessageBackend()) {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend, clock, retry: false });
  return { clock, messaging, backend };
}

describe('Messaging: queues', () => {
  it('validates queue names and options with typed errors', async () => {
    const { messaging } = setup();
    await assert.rejects(messaging.createQueue(''), InvalidOptionsError);
    await assert.rejects(messaging.createQueue('has space'), InvalidOptionsError);
    await assert.rejects(messaging.createQueue('{tagged}'), InvalidOptionsError);
    await assert.rejects(messaging.createQueue('q', { lockDurationMs: 0 }), { option: 'lockDurationMs' });
    await assert.rejects(messaging.createQueue('q', { maxDeliveryCount: 0 }), { option: 'maxDeliveryCount' });
    await assert.rejects(messaging.createQueue('q', { duplicateWindowMs: -1 }), {
      option: 'duplicateWindowMs',
    });
    await assert.rejects(messaging.createQueue('q', { maxMessageBytes: 1e12 }), {
      option: 'maxMessageBytes',
    });
    await assert.rejects(messaging.createQueue('q', { priority: { policy: 'weighted', agingMs: 0 } }), {
      option: 'priority.agingMs',
    });
    await assert.rejects(messaging.createQueue('q', { priority: 'fair' as never }), { option: 'priority' });
    await assert.rejects(messaging.createQueue('q', { onSessionDeadLetter: 'skip' as never }), {
      option: 'onSessionDeadLetter',
    });
    const settings = await messaging.createQueue('orders.v1/eu:main', { sessions: true });
    assert.equal(settings.sessions, true);
    assert.equal(settings.onSessionDeadLetter, 'hold');
    const moving = await messaging.createQueue('moving', { sessions: true, onSessionDeadLetter: 'continue' });
    assert.equal(moving.onSessionDeadLetter, 'continue');
    assert.equal(settings.lockDurationMs, 30_000);
    assert.equal(settings.maxDeliveryCount, 10);
    assert.equal(settings.duplicateWindowMs, 600_000);
  });

  it('round-trips JSON, text and binary bodies with their content types', async () => {
    const { messaging } = setup();
    await messaging.createQueue('q');
    const queue = messaging.queue('q');
    await queue.send({ order: 42, lines: ['a', 'b'] });
    await queue.send(new Uint8Array([0, 255, 7]));
    await queue.send(new TextEncoder().encode('héllo'), { contentType: 'text/plain; charset=utf-8' });
    const [json, binary, text] = await queue.receive({ max: 3 });
    assert.deepEqual(json?.body, { order: 42, lines: ['a', 'b'] });
    assert.equal(json?.contentType, 'application/json');
    assert.deepEqual(binary?.body, new Uint8Array([0, 255, 7]));
    assert.equal(text?.body, 'héllo');
  });

  it('rejects bad messages before anything is stored', async () => {
    const { messaging } = setup();
    await messaging.createQueue('q', { maxMessageBytes: 100 });
    await messaging.createQueue('sessions', { sessions: true });
    const queue = messaging.queue('q');
    await assert.rejects(queue.send('x'.repeat(200)), MessageTooLargeError);
    await assert.rejects(queue.send(1, { priority: 10 }), { field: 'priority' });
    await assert.rejects(queue.send(1, { priority: 1.5 }), InvalidMessageError);
    await assert.rejects(queue.send(1, { id: '' }), { field: 'id' });
    await assert.rejects(queue.send(1, { id: 'lone \uD800 surrogate' }), { field: 'id' });
    await assert.rejects(queue.send(1, { subject: '\uDC00' }), { field: 'subject' });
    await assert.rejects(queue.send(1, { headers: { k: 'a\uD83D' } }), { field: 'headers.k' });
    await assert.rejects(queue.send(1, { headers: { a: 1 as never } }), { field: 'headers.a' });
    await assert.rejects(queue.send(1, { delayMs: -5 }), { field: 'delayMs' });
    await assert.rejects(queue.send(1, { ttlMs: 0 }), { field: 'ttlMs' });
    await assert.rejects(queue.send(undefined), { field: 'body' });
    await assert.rejects(queue.sendBatch([{ body: 1 }, { body: 2, priority: -1 }]), InvalidMessageError);
    await assert.rejects(messaging.queue('sessions').send(1), { field: 'sessionId' });
    await assert.rejects(messaging.queue('missing').send(1), UnknownQueueError);
    assert.equal((await queue.stats()).length, 0, 'a failed batch stores nothing');
  });

  it('maps delays, delivery times and TTLs onto the clock', async () => {
    const { messaging } = setup();
    await messaging.createQueue('q');
    const queue = messaging.queue<string>('q');
    await queue.send('delayed', { delayMs: 1000 });
    await queue.send('at', { deliverAt: new Date(T0 + 500) });
    await queue.send('short', { ttlMs: 100, delayMs: 200 });
    const peeked = await queue.peek();
    assert.deepEqual(
      peeked.map((m) => [m.availableAt, m.expiresAt]),
      [
        [T0 + 1000, undefined],
        [T0 + 500, undefined],
        [T0 + 200, T0 + 100],
      ],
    );
  });

  it('dead-letters a body that cannot be decoded instead of returning it', async () => {
    const { messaging, backend } = setup();
    await messaging.createQueue('q');
    await backend.send(
      'q',
      [{ id: 'bad', body: new TextEncoder().encode('{nope'), contentType: 'application/json' }],
      T0,
    );
    assert.deepEqual(await messaging.queue('q').receive(), []);
    const [dead] = await messaging.queue('q').listDeadLetters();
    assert.equal(dead?.deadLetterReason, DEAD_LETTER_UNDECODABLE);
    assert.match(dead?.deadLetterDescription ?? '', /JSON/);
  });

  it('settles a delivery once, and reports a lost lock', async () => {
    const { messaging, clock } = setup();
    await messaging.createQueue('q', { lockDurationMs: 1000 });
    const queue = messaging.queue('q');
    await queue.send('a');
    const [first] = await queue.receive();
    await clock.advance(1000);
    const [second] = await queue.receive();
    assert.equal(second?.deliveryCount, 2);
    await assert.rejects(first?.complete() as Promise<void>, MessageLockLostError);
    await assert.rejects(first?.complete() as Promise<void>, MessageAlreadySettledError);
    await second?.complete();
    assert.equal((await queue.stats()).length, 0);
  });

  it('renews a lock through the message', async () => {
    const { messaging, clock } = setup();
    await messaging.createQueue('q', { lockDurationMs: 1000 });
    const queue = messaging.queue('q');
    await queue.send('a');
    const [message] = await queue.receive();
    await clock.advance(900);
    assert.equal(await message?.renewLock(5000), T0 + 900 + 5000);
    assert.equal(message?.lockedUntil, T0 + 5900);
    await clock.advance(2000);
    assert.deepEqual(await queue.receive(), []);
  });

  it('waits for a message when asked to, woken by the send', async () => {
    const { messaging } = setup();
    await messaging.createQueue('q');
    const queue = messaging.queue<string>('q');
    const waiting = queue.receive({ waitMs: 60_000 });
    await queue.send('hello');
    const [message] = await waiting;
    assert.equal(message?.body, 'hello');
  });

  it('waits for a scheduled message to fall due', async () => {
    const { messaging, clock } = setup();
    await messaging.createQueue('q');
    const queue = messaging.queue<string>('q');
    await queue.send('later', { delayMs: 5000 });
    const result: { received?: unknown[] } = {};
    void queue.receive({ waitMs: 60_000 }).then((messages) => {
      result.received = messages;
    });
    await clock.advance(4999);
    assert.equal(typeof result.received, 'undefined', 'not before it is due');
    await clock.advance(1);
    await waitUntil(() => result.received !== undefined, 'the scheduled message arrived');
    assert.equal(result.received?.length, 1);
  });

  it('retries a transient backend failure and never a typed error', async () => {
    const inner = new MemoryMessageBackend();
    let failures = 2;
    let unknownCalls = 0;
    const flaky = new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'send') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<MessageBackend['send']>) => {
          if (args[0] === 'missing') unknownCalls++;
          if (args[0] === 'q' && failures-- > 0) throw new Error('ECONNRESET');
          return target.send(...args);
        };
      },
    });
    const clock = new VirtualClock({ now: T0 });
    const messaging = new Messaging({ backend: flaky, clock });
    await messaging.createQueue('q');
    let accepted: boolean | undefined;
    void messaging
      .queue('q')
      .send('x')
      .then((outcome) => {
        accepted = outcome.accepted;
      });
    for (let i = 0; i < 100 && accepted === undefined; i++) await clock.advance(1000);
    assert.equal(accepted, true);
    assert.equal(failures, -1);
    await inner.putQueue('missing', (await inner.getQueue('q')) as never);
    await inner.deleteQueue('missing');
    await assert.rejects(messaging.queue('missing').send('x'), UnknownQueueError);
    assert.ok(unknownCalls <= 1, 'typed errors are not retried');
  });

  it('stores session state as JSON', async () => {
    const { messaging } = setup();
    await messaging.createQueue('s', { sessions: true });
    const queue = messaging.queue('s');
    await queue.setSessionState('order-1', { step: 2, paid: true });
    assert.deepEqual(await queue.getSessionState('order-1'), { step: 2, paid: true });
    await queue.setSessionState('order-1', undefined);
    assert.equal(await queue.getSessionState('order-1'), undefined);
  });
});

describe('Messaging: topics', () => {
  it('publishes to subscriptions created through the client', async () => {
    const { messaging } = setup();
    await messaging.createTopic('orders.created');
    await messaging.createTopic('orders.cancelled');
    await messaging.subscribe('billing', { topics: 'orders.*' });
    await messaging.subscribe('audit-eu', { topics: ['orders.#'], filter: { headers: { region: 'eu' } } });
    const topic = messaging.topic<{ id: number }>('orders.created');
    const outcome = await topic.publish({ id: 1 }, { headers: { region: 'eu' } });
    assert.deepEqual([...outcome.deliveredTo].sort(), ['audit-eu', 'billing']);
    await messaging.topic('orders.cancelled').publish({ id: 2 }, { headers: { region: 'us' } });
    const billing = await messaging.queue<{ id: number }>('billing').receive({ max: 10 });
    assert.deepEqual(
      billing.map((m) => m.body.id),
      [1, 2],
    );
    const audit = await messaging.queue<{ id: number }>('audit-eu').receive({ max: 10 });
    assert.deepEqual(
      audit.map((m) => m.body.id),
      [1],
    );
  });

  it('validates topics and subscriptions', async () => {
    const { messaging } = setup();
    await assert.rejects(messaging.createTopic('bad..name'), InvalidOptionsError);
    await assert.rejects(
      messaging.createTopic('a.*'),
      InvalidOptionsError,
      'wildcards only in subscriptions',
    );
    await assert.rejects(messaging.subscribe('q', { topics: [] }), { option: 'topics' });
    await assert.rejects(messaging.subscribe('q', { topics: ['a.b*'] }), { option: 'topics[0]' });
    await assert.rejects(messaging.createTopic('t', { retentionMs: -1 }), { option: 'retentionMs' });
    await assert.rejects(messaging.topic('nobody.home').publish(1), UnknownTopicError);
  });
});
