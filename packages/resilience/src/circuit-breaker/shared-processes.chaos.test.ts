/**
 * The acceptance test: separate OS processes share one breaker through Redis, and through
 * PostgreSQL. One trips it; the others (one notified by pub/sub or LISTEN/NOTIFY, one polling) see it open
 * with the same open-until time; a reset in one closes it in the others. Every wait is bounded.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { randomId } from '@stratus/core';
import { type ChildHandle, postgresForSuite, redisForSuite, runChild } from '@stratus/testkit';

const child = new URL('./fixtures/shared-breaker-child.ts', import.meta.url);
const WAIT_MS = 15_000;

interface StateMessage {
  type: 'state';
  state: string;
  retryAt?: number;
}

const isType =
  (type: string, extra: (m: Record<string, unknown>) => boolean = () => true) =>
  (message: unknown) => {
    const m = message as Record<string, unknown>;
    return m.type === type && extra(m);
  };

async function stateOf(instance: ChildHandle): Promise<StateMessage> {
  instance.send({ cmd: 'state' });
  return instance.nextMessage<StateMessage>(isType('state'), WAIT_MS);
}

async function sharedBreakerAcrossProcesses(env: Record<string, string>): Promise<void> {
  const key = `circuit-${randomId()}`;
  const start = (instance: string, subscribe: boolean) =>
    runChild(child, {
      env: { ...env, CIRCUIT_KEY: key, INSTANCE: instance, SUBSCRIBE: subscribe ? '1' : '0' },
      lifetimeMs: 60_000,
    });
  const tripper = start('tripper', true);
  const notified = start('notified', true);
  const polling = start('polling', false);
  const all = [tripper, notified, polling];
  try {
    for (const instance of all) {
      const ready = await instance.nextMessage<{ state: string; available: boolean }>(
        isType('ready'),
        WAIT_MS,
      );
      assert.deepEqual([ready.state, ready.available], ['closed', true]);
    }

    tripper.send({ cmd: 'fail' });
    assert.equal((await tripper.nextMessage<{ state: string }>(isType('failed'), WAIT_MS)).state, 'closed');
    tripper.send({ cmd: 'fail' });
    assert.equal((await tripper.nextMessage<{ state: string }>(isType('failed'), WAIT_MS)).state, 'open');

    // The other processes report the opening as it reaches them (events, not sleeps).
    for (const observer of [notified, polling]) {
      await observer.nextMessage(
        isType('state-change', (m) => m.to === 'open' && m.reason === 'shared'),
        WAIT_MS,
      );
    }
    const opened = await stateOf(tripper);
    for (const observer of [notified, polling]) {
      const seen = await stateOf(observer);
      assert.equal(seen.state, 'open');
      assert.ok(Math.abs((seen.retryAt ?? 0) - (opened.retryAt ?? 0)) < 10, 'same open-until time');
    }

    polling.send({ cmd: 'reset' });
    await polling.nextMessage(isType('reset'), WAIT_MS);
    for (const observer of [tripper, notified]) {
      await observer.nextMessage(
        isType('state-change', (m) => m.to === 'closed' && m.reason === 'shared'),
        WAIT_MS,
      );
    }
  } finally {
    for (const instance of all) instance.send({ cmd: 'exit' });
    const exits = await Promise.all(all.map((instance) => instance.exited));
    assert.deepEqual(
      exits.map((e) => e.code),
      [0, 0, 0],
      all.map((i) => i.stderr).join('\n'),
    );
  }
}

describe('one breaker shared by separate processes', () => {
  describe('through Redis', async () => {
    const redis = await redisForSuite('circuit-processes');
    after(() => redis.release());
    it('trips in one process and is seen open in the others', { skip: redis.skip }, async () => {
      await sharedBreakerAcrossProcesses({
        STORE: 'redis',
        STORE_URL: redis.url ?? '',
        KEY_PREFIX: `${redis.keyPrefix}circuit:`,
      });
    });
  });

  describe('through PostgreSQL', async () => {
    const database = await postgresForSuite('circuit-processes');
    after(() => database.release());
    it('trips in one process and is seen open in the others', { skip: database.skip }, async () => {
      await sharedBreakerAcrossProcesses({ STORE: 'postgres', STORE_URL: database.url ?? '' });
    });
  });
});
