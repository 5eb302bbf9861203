import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { CommandBus, type CommandEnvelope } from '../command-bus.js';
import { commandBusSender, queueTimeoutScheduler } from './senders.js';

describe('process manager senders', () => {
  it('sends through a CommandBus with the recorded id, correlation id and expiry', async () => {
    const handled: CommandEnvelope[] = [];
    const bus = new CommandBus().register('Ping', (command) => void handled.push(command));
    const expiresAt = Date.now() + 60_000;
    await commandBusSender(bus).send({
      type: 'Ping',
      id: 'c-1',
      data: { n: 1 },
      correlationId: 'k',
      expiresAt,
    });
    assert.deepEqual(handled, [{ type: 'Ping', id: 'c-1', data: { n: 1 }, correlationId: 'k', expiresAt }]);
    assert.equal(
      await commandBusSender(bus).send({ type: 'Ping', id: 'c-2', data: {}, expiresAt: 0 }),
      'expired',
    );
    assert.equal(handled.length, 1);
    assert.throws(() => commandBusSender({} as never), InvalidOptionsError);
  });

  it('schedules a timeout as a message due at its time, once per timeout id', async () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    await messaging.createQueue('timeouts');
    const scheduler = queueTimeoutScheduler(messaging, 'timeouts');
    const timeout = {
      processName: 'p',
      processId: '1',
      timeoutId: 't-1',
      type: 'T',
      data: {},
      dueAt: Date.now() + 60_000,
    };
    await scheduler.schedule(timeout);
    await scheduler.schedule(timeout);
    const queued = await messaging.queue('timeouts').peek();
    assert.deepEqual(
      queued.map((m) => [m.id, m.availableAt, m.subject, m.correlationId]),
      [['t-1', timeout.dueAt, 'T', '1']],
    );
    assert.throws(() => queueTimeoutScheduler({} as never, 'timeouts'), InvalidOptionsError);
  });
});
