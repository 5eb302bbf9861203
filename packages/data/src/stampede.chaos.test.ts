/**
 * The acceptance tests with real OS processes sharing one Redis: 1,000 concurrent misses of one key
 * spread over 2 processes cause exactly one load; and when the process holding the load lock is SIGKILLed
 * mid-load, the other one gets the value (loading it itself) once the lock lapses. Every wait is bounded.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { randomId } from '@stratus/core';
import { type ChildHandle, redisForSuite, runChild, waitUntil } from '@stratus/testkit';
import { Redis } from 'ioredis';

const child = new URL('./fixtures/stampede-child.ts', import.meta.url);
const WAIT_MS = 20_000;
const suite = await redisForSuite('data-stampede');

interface Done {
  type: 'done';
  count: number;
  distinct: string[];
  loads: number;
}

const isType = (type: string) => (message: unknown) => (message as { type?: string }).type === type;
const has = (instance: ChildHandle, type: string) => instance.messages.some(isType(type));

describe('cross-process stampede through Redis', { skip: suite.skip }, () => {
  const redis = new Redis(suite.url ?? '');
  const started: ChildHandle[] = [];
  after(async () => {
    await Promise.all(started.map((c) => c.stop()));
    await suite.release();
    redis.disconnect();
  });

  const start = (instance: string, keyPrefix: string, lockTtlMs: number) => {
    const handle = runChild(child, {
      env: {
        REDIS_URL: suite.url,
        KEY_PREFIX: keyPrefix,
        KEY: 'product:42',
        INSTANCE: instance,
        LOCK_TTL_MS: String(lockTtlMs),
      },
      lifetimeMs: 60_000,
    });
    started.push(handle);
    return handle;
  };
  const loadsIn = async (keyPrefix: string) => Number(await redis.get(`${keyPrefix}loads`));

  it('1,000 concurrent misses over 2 processes cause exactly 1 load', async () => {
    const keyPrefix = `${suite.keyPrefix}stampede-${randomId(4)}:`;
    const a = start('A', keyPrefix, 10_000);
    const b = start('B', keyPrefix, 10_000);
    await Promise.all([a, b].map((c) => c.nextMessage(isType('ready'), WAIT_MS)));
    for (const c of [a, b]) c.send({ cmd: 'go', n: 500 });

    // Whichever process took the lock loads and holds; the other must be seen waiting on it before the load ends.
    await waitUntil(() => has(a, 'loading') || has(b, 'loading'), 'one process loads', WAIT_MS);
    const [loader, waiter] = has(a, 'loading') ? [a, b] : [b, a];
    await waiter.nextMessage(isType('waiting'), WAIT_MS);
    loader.send({ cmd: 'release' });

    const done = await Promise.all([a, b].map((c) => c.nextMessage<Done>(isType('done'), WAIT_MS)));
    assert.equal(await loadsIn(keyPrefix), 1, 'one load across both processes');
    assert.deepEqual(
      done.map((d) => d.loads),
      loader === a ? [1, 0] : [0, 1],
    );
    assert.equal(done[0]!.count + done[1]!.count, 1_000);
    const value = `loaded by ${loader === a ? 'A' : 'B'}`;
    assert.deepEqual(
      done.map((d) => d.distinct),
      [[value], [value]],
    );
    for (const c of [a, b]) c.send({ cmd: 'exit' });
    assert.deepEqual(
      (await Promise.all([a.exited, b.exited])).map((e) => e.code),
      [0, 0],
    );
  });

  it('the other process gets the value after the lock lapses when the loading process is SIGKILLed', async () => {
    const keyPrefix = `${suite.keyPrefix}killed-${randomId(4)}:`;
    // The survivor must find the lock held: a loader stalled for a third of this would let it lapse early.
    const lockTtlMs = 3_000;
    const doomed = start('doomed', keyPrefix, lockTtlMs);
    const survivor = start('survivor', keyPrefix, lockTtlMs);
    await Promise.all([doomed, survivor].map((c) => c.nextMessage(isType('ready'), WAIT_MS)));

    doomed.send({ cmd: 'go', n: 500 });
    await doomed.nextMessage(isType('loading'), WAIT_MS);
    survivor.send({ cmd: 'go', n: 500 });
    await survivor.nextMessage(isType('waiting'), WAIT_MS);

    doomed.kill('SIGKILL');
    assert.equal((await doomed.exited).signal, 'SIGKILL');
    assert.equal(has(doomed, 'done'), false, 'it died holding the lock, mid-load');

    // No release can come from the dead process: the survivor takes the lapsed lock and loads itself.
    await survivor.nextMessage(isType('loading'), WAIT_MS);
    survivor.send({ cmd: 'release' });
    const done = await survivor.nextMessage<Done>(isType('done'), WAIT_MS);
    assert.deepEqual([done.count, done.distinct, done.loads], [500, ['loaded by survivor'], 1]);
    assert.equal(await loadsIn(keyPrefix), 2, 'the dead one load and the survivor one');
    survivor.send({ cmd: 'exit' });
    assert.equal((await survivor.exited).code, 0);
  });
});
