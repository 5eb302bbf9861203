import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { redisForSuite, waitUntil } from '@stratus/testkit';
import { Redis } from 'ioredis';
import type { QueueSettings } from '../backend.js';
import { messageBackendContract } from '../contract.js';
import { redisMessageBackend } from './redis-backend.js';

const suite = await redisForSuite('messaging-redis');

const settings: QueueSettings = {
  lockDurationMs: 30_000,
  maxDeliveryCount: 10,
  duplicateWindowMs: 60_000,
  defaultTtlMs: undefined,
  maxMessageBytes: 256 * 1024,
  priority: { policy: 'strict' },
  sessions: false,
};
const T0 = 1_750_000_000_000;
const msg = (id: string) => ({ id, body: new TextEncoder().encode(id) });

describe('redis message backend options', () => {
  it('needs exactly one of client and url', () => {
    assert.throws(() => redisMessageBackend({}), InvalidOptionsError);
    const client = new Redis({ lazyConnect: true });
    assert.throws(() => redisMessageBackend({ client, url: 'redis://127.0.0.1' }), InvalidOptionsError);
    assert.throws(() => redisMessageBackend({ client: {} as never }), /ioredis/);
    assert.throws(() => redisMessageBackend({ client, keyPrefix: 5 as never }), /keyPrefix/);
    client.disconnect();
  });
});

describe('redis message backend', { skip: suite.skip }, () => {
  const url = suite.url as string;
  const client = new Redis(url, { lazyConnect: true });
  after(async () => {
    await suite.release();
    client.disconnect();
  });

  messageBackendContract('redis', async () =>
    redisMessageBackend({ client, keyPrefix: `${suite.keyPrefix}contract:` }),
  );

  it('opens and closes its own connections from a url', async () => {
    const backend = redisMessageBackend({ url, keyPrefix: `${suite.keyPrefix}url:` });
    await backend.putQueue('q', settings);
    await backend.send('q', [msg('a')], T0);
    const woken = new Promise<void>((resolve) => backend.watch('q', resolve));
    await backend.send('q', [msg('b')], T0);
    await woken;
    assert.equal((await backend.stats('q', T0)).available, 2);
    await backend.close();
    assert.equal(client.status === 'end', false, 'the client passed to other backends stays open');
  });

  it('two instances competing for one queue never deliver a message twice', async () => {
    const keyPrefix = `${suite.keyPrefix}compete:`;
    const one = redisMessageBackend({ client, keyPrefix });
    const other = new Redis(url);
    const two = redisMessageBackend({ client: other, keyPrefix });
    try {
      await one.putQueue('work', settings);
      const total = 2000;
      for (let i = 0; i < total; i += 500) {
        await one.send(
          'work',
          Array.from({ length: 500 }, (_, j) => msg(`m${i + j}`)),
          T0,
        );
      }
      const seen = new Map<string, number>();
      const drain = async (backend: typeof one) => {
        for (let round = 0; round < 1000; round++) {
          const { messages } = await backend.receive('work', { max: 25, lockMs: 60_000, now: T0 });
          if (messages.length === 0) return;
          for (const m of messages) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
          assert.ok(
            (
              await backend.complete(
                'work',
                messages.map((m) => m.lockToken),
                T0,
              )
            ).every((o) => o === 'ok'),
          );
        }
      };
      await Promise.all([drain(one), drain(two), drain(one), drain(two)]);
      assert.equal(seen.size, total);
      assert.ok([...seen.values()].every((count) => count === 1));
    } finally {
      await one.close();
      await two.close();
      other.disconnect();
    }
  });

  it('wakes a watcher on another instance', async () => {
    const keyPrefix = `${suite.keyPrefix}wake:`;
    const sender = redisMessageBackend({ client, keyPrefix });
    const watcher = redisMessageBackend({ url, keyPrefix });
    try {
      await sender.putQueue('q', settings);
      let wakes = 0;
      const stop = watcher.watch('q', () => wakes++);
      // The subscription is in force once the watcher's own wake-up for it has run.
      await waitUntil(() => wakes > 0, 'the subscription is in force');
      const before = wakes;
      await sender.send('q', [msg('a')], T0);
      await waitUntil(() => wakes > before, 'the other instance is woken');
      stop();
      const stopped = wakes;
      await sender.send('q', [msg('b')], T0);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(wakes, stopped, 'no wake-up after stop');
    } finally {
      await sender.close();
      await watcher.close();
    }
  });

  it('reloads its scripts after SCRIPT FLUSH', async () => {
    const backend = redisMessageBackend({ client, keyPrefix: `${suite.keyPrefix}flush:` });
    await backend.putQueue('q', settings);
    await backend.send('q', [msg('a')], T0);
    await client.script('FLUSH');
    await backend.send('q', [msg('b')], T0);
    const { messages } = await backend.receive('q', { max: 10, lockMs: 1000, now: T0 });
    assert.deepEqual(
      messages.map((m) => m.id),
      ['a', 'b'],
    );
    await backend.close();
  });

  it('keeps every key of a queue in its hash slot, under the key prefix', async () => {
    const keyPrefix = `${suite.keyPrefix}slots:`;
    const backend = redisMessageBackend({ client, keyPrefix });
    await backend.putQueue('orders', { ...settings, sessions: true });
    await backend.send(
      'orders',
      [
        { ...msg('a'), sessionId: 's' },
        { ...msg('b'), sessionId: 's' },
      ],
      T0,
    );
    await backend.setSessionState('orders', 's', new Uint8Array([1]));
    const { messages } = await backend.receive('orders', { max: 1, lockMs: 1000, now: T0 });
    await backend.deadLetter('orders', messages[0]?.lockToken as string, 'test', undefined, T0);
    const keys = await client.keys(`${keyPrefix}*`);
    const queueKeys = keys.filter((key) => key !== `${keyPrefix}queues`);
    assert.ok(queueKeys.length >= 8, `keys: ${keys.join(', ')}`);
    assert.ok(queueKeys.every((key) => key.startsWith(`${keyPrefix}q:{orders}:`)));
    await backend.close();
  });
});
