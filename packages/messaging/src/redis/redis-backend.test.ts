import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { findRedisServer, freePort, redisForSuite, waitUntil } from '@stratus/testkit';
import { Redis, type RedisOptions } from 'ioredis';
import {
  completeAndReceive,
  type MessageBackend,
  type MessageFilter,
  type OutgoingMessage,
  type QueueSettings,
  type StoredMessage,
  type Subscription,
} from '../backend.js';
import { MemoryMessageBackend } from '../memory/memory-backend.js';
import { messageBackendContract } from '../message-backend.contract.js';
import { DEFAULT_QUEUE_SETTINGS } from '../options.js';
import { subscriptionMatches } from '../routing.js';
import { LIBRARY_NAME } from './library.js';
import { RedisMessageBackend } from './redis-backend.js';
import { SHARED_PARTS } from './scripts.js';

const suite = await redisForSuite('messaging-redis');

const settings: QueueSettings = { ...DEFAULT_QUEUE_SETTINGS, duplicateWindowMs: 60_000 };
const T0 = 1_750_000_000_000;
const msg = (id: string) => ({ id, body: new TextEncoder().encode(id) });

describe('redis message backend options', () => {
  it('needs exactly one of client and url', () => {
    assert.throws(() => new RedisMessageBackend({}), InvalidOptionsError);
    const client = new Redis({ lazyConnect: true });
    assert.throws(() => new RedisMessageBackend({ client, url: 'redis://127.0.0.1' }), InvalidOptionsError);
    assert.throws(() => new RedisMessageBackend({ client: {} as never }), /ioredis/);
    assert.throws(() => new RedisMessageBackend({ client, keyPrefix: 5 as never }), /keyPrefix/);
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

  const connect = async () => new RedisMessageBackend({ client, keyPrefix: `${suite.keyPrefix}contract:` });
  messageBackendContract('redis', connect, { reopen: connect });

  /** A client of the suite's server that lists the commands the backend sends through it. */
  const countingClient = (options: RedisOptions = {}) => {
    const counted = new Redis(url, { lazyConnect: true, ...options });
    const calls: string[] = [];
    const callBuffer = counted.callBuffer.bind(counted);
    counted.callBuffer = ((command: string, ...rest: unknown[]) => {
      calls.push(command);
      return (callBuffer as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof counted.callBuffer;
    return { counted, calls };
  };

  it('sends concurrent small sends to a queue at one time together, each with its own outcome', async (t) => {
    const { counted, calls } = countingClient();
    const backend = new RedisMessageBackend({ client: counted, keyPrefix: `${suite.keyPrefix}group:` });
    t.after(() => counted.disconnect());
    await backend.putQueue('g', settings);
    await backend.send('g', [msg('warm')], T0);
    calls.length = 0;
    const ids = Array.from({ length: 50 }, (_, i) => `m${i}`);
    const outcomes = await Promise.all([
      ...ids.map((id) => backend.send('g', [msg(id)], T0 + 1)),
      backend.send('g', [msg('m3'), msg('pair')], T0 + 1),
      backend.send('g', [msg('later')], T0 + 2),
    ]);
    // The first send of T0 + 1 finds nothing in flight and goes at once, the other 50 of T0 + 1 go together after
    // it, and T0 + 2 goes on its own.
    assert.deepEqual(calls, ['FCALL', 'FCALL', 'FCALL']);
    const sequences = outcomes.slice(0, 50).map(([outcome]) => outcome?.sequence as number);
    assert.ok(
      sequences.every((sequence, i) => i === 0 || sequence > (sequences[i - 1] as number)),
      `in call order: ${sequences}`,
    );
    assert.deepEqual(
      outcomes[50]?.map((o) => [o.id, o.accepted]),
      [
        ['m3', false],
        ['pair', true],
      ],
      'a duplicate within the group is refused, the rest of its send kept',
    );
    assert.equal(outcomes[51]?.[0]?.accepted, true);
    const stored = await backend.peek('g', { limit: 100 });
    assert.equal(stored.length, 53);
    assert.deepEqual(
      stored.filter((m) => m.id === 'later').map((m) => m.enqueuedAt),
      [T0 + 2],
      'each send keeps its own time',
    );
  });

  it('opens and closes its own connections from a url', async () => {
    const backend = new RedisMessageBackend({ url, keyPrefix: `${suite.keyPrefix}url:` });
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
    const one = new RedisMessageBackend({ client, keyPrefix });
    const other = new Redis(url);
    const two = new RedisMessageBackend({ client: other, keyPrefix });
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
    const sender = new RedisMessageBackend({ client, keyPrefix });
    const watcher = new RedisMessageBackend({ url, keyPrefix });
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

  const receivedIds = async (backend: RedisMessageBackend, queue: string) =>
    (await backend.receive(queue, { max: 10, lockMs: 1000, now: T0 })).messages.map((m) => m.id);

  it('runs its scripts as functions of one library, loaded again when the server lost it', async (t) => {
    const { counted, calls } = countingClient();
    t.after(() => counted.disconnect());
    const backend = new RedisMessageBackend({ client: counted, keyPrefix: `${suite.keyPrefix}functions:` });
    await backend.putQueue('q', settings);
    await backend.send('q', [msg('a')], T0);
    const loaded = (await client.call('FUNCTION', 'LIST', 'LIBRARYNAME', LIBRARY_NAME)) as unknown[];
    assert.equal(loaded.length, 1, 'the library is loaded');
    await client.call('FUNCTION', 'DELETE', LIBRARY_NAME);
    calls.length = 0;
    await backend.send('q', [msg('b')], T0);
    assert.deepEqual(calls, ['FCALL', 'FCALL'], 'function not found, loaded, called again');
    assert.deepEqual(await receivedIds(backend, 'q'), ['a', 'b']);
  });

  it('keeps no state between calls in the library: its shared parts make no table at the top level', () => {
    const tables = SHARED_PARTS.flatMap((part) => part.split('\n')).filter((line) =>
      /^local [^(]*=\s*\{/.test(line),
    );
    assert.deepEqual(tables, []);
  });

  it('runs its scripts by EVALSHA where it may not load functions, and reloads them after SCRIPT FLUSH', async (t) => {
    const user = `${suite.keyPrefix}no-functions`;
    await client.call('ACL', 'SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-function');
    const { counted: limited, calls } = countingClient({ username: user, password: 'unused' });
    t.after(async () => {
      limited.disconnect();
      await client.call('ACL', 'DELUSER', user);
    });
    const backend = new RedisMessageBackend({ client: limited, keyPrefix: `${suite.keyPrefix}flush:` });
    await backend.putQueue('q', settings);
    await backend.send('q', [msg('a')], T0);
    await client.script('FLUSH');
    calls.length = 0;
    await backend.send('q', [msg('b')], T0);
    assert.deepEqual(calls, ['EVALSHA', 'EVAL'], 'NOSCRIPT, then the script itself');
    assert.deepEqual(await receivedIds(backend, 'q'), ['a', 'b']);
  });

  it("completes a message and receives its session's next one in one script call", async () => {
    const { counted, calls } = countingClient();
    const backend = new RedisMessageBackend({ client: counted, keyPrefix: `${suite.keyPrefix}car:` });
    await backend.putQueue('s', { ...settings, sessions: true });
    const inSession = (id: string) => ({ ...msg(id), sessionId: 'A' });
    await backend.send('s', [inSession('a1'), inSession('a2'), inSession('a3')], T0);
    const [a1] = (await backend.receive('s', { max: 5, lockMs: 1000, now: T0 })).messages;
    const request = { max: 5, lockMs: 1000, now: T0 + 1 };
    const [a2] = (await completeAndReceive(backend, 's', a1?.lockToken as string, request)).received.messages;
    calls.length = 0;
    const next = await completeAndReceive(backend, 's', a2?.lockToken as string, request);
    assert.deepEqual(calls, ['FCALL']);
    assert.equal(next.outcome, 'ok');
    assert.deepEqual(
      next.received.messages.map((m) => [m.id, m.deliveryCount]),
      [['a3', 1]],
    );
    // A lost lock: nothing is completed and nothing received (a3 stays locked to its holder).
    const lost = await completeAndReceive(backend, 's', a2?.lockToken as string, request);
    assert.deepEqual(lost, { outcome: 'lost', received: { messages: [], nextDueAt: undefined } });
    assert.deepEqual(
      (await backend.peek('s', { limit: 10 })).map((m) => [m.id, m.state]),
      [['a3', 'locked']],
    );
    await backend.close();
    counted.disconnect();
  });

  it('keeps every key of a queue in its hash slot, under the key prefix', async () => {
    const keyPrefix = `${suite.keyPrefix}slots:`;
    const backend = new RedisMessageBackend({ client, keyPrefix });
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

  it('routes published messages as routing.ts does (patterns and filters evaluated in Lua)', async () => {
    const backend = new RedisMessageBackend({ client, keyPrefix: `${suite.keyPrefix}routing:` });
    const random = generator(42);
    const below = (n: number) => Math.floor(random() * n);
    const pick = <T>(values: readonly T[]): T => values[below(values.length)] as T;
    const path = (segments: readonly string[], min: number) =>
      Array.from({ length: min + below(4 - min) }, () => pick(segments)).join('.');
    const filters: (MessageFilter | undefined)[] = [
      undefined,
      { subject: 'x' },
      { subject: ['x', 'y'] },
      { headers: { h: 'v' } },
      { headers: { h: ['v', 'w'] } },
      { headers: { h: { exists: true } } },
      { headers: { h: { exists: false } } },
      { headers: { h: { prefix: 'v' } } },
      { subject: 'y', headers: { h: { prefix: '' }, k: 'z' } },
    ];
    try {
      let deliveries = 0;
      const subscriptions: Subscription[] = [];
      for (let i = 0; i < 30; i++) {
        const subscription = {
          queue: `q${i}`,
          topics: Array.from({ length: 1 + below(2) }, () => path(['a', 'b', '*', '#'], 0)),
          filter: pick(filters),
        };
        await backend.putQueue(subscription.queue, { ...settings, duplicateWindowMs: 0 });
        await backend.subscribe(subscription, 'none', T0);
        subscriptions.push(subscription);
      }
      for (let i = 0; i < 60; i++) {
        const topic = path(['a', 'b'], 1);
        await backend.putTopic(topic, { retentionMs: 0 });
        const message: OutgoingMessage = {
          ...msg(`m${i}`),
          subject: pick([undefined, 'x', 'y']),
          headers: pick<Record<string, string> | undefined>([
            undefined,
            {},
            { h: 'v' },
            { h: 'vw', k: 'z' },
            { h: 'w' },
            { k: 'z' },
          ]),
        };
        const [outcome] = await backend.publish(topic, [message], T0);
        deliveries += outcome?.deliveredTo.length ?? 0;
        const expected = subscriptions
          .filter((subscription) => subscriptionMatches(subscription, topic, message))
          .map((subscription) => subscription.queue);
        assert.deepEqual(
          [...(outcome?.deliveredTo ?? [])].sort(),
          expected.sort(),
          `${topic} ${JSON.stringify(message)}`,
        );
      }
      assert.ok(deliveries > 20, `only ${deliveries} copies: the cases are too narrow to compare`);
    } finally {
      await backend.close();
    }
  });

  it('behaves like the memory backend on random operation sequences', async () => {
    const backend = new RedisMessageBackend({ client, keyPrefix: `${suite.keyPrefix}differential:` });
    try {
      for (let seed = 1; seed <= 8; seed++)
        await compareWithMemory(seed, backend, new MemoryMessageBackend());
    } finally {
      await backend.close();
    }
  });
});

const redisServer = findRedisServer();

describe('redis message backend across a server restart', {
  skip: typeof redisServer === 'string' ? suite.skip : redisServer.reason,
}, () => {
  it('works again without being recreated, and wakes its watchers after reconnecting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stratus-redis-restart-'));
    const port = await freePort();
    const start = async () => {
      const child = spawn(
        redisServer as string,
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        { stdio: 'ignore' },
      );
      const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => {});
      await waitUntil(
        () =>
          probe.connect().then(
            () => true,
            () => false,
          ),
        'redis-server is up',
      );
      probe.disconnect();
      return child;
    };
    let server: ChildProcess = await start();
    const backend = new RedisMessageBackend({ url: `redis://127.0.0.1:${port}`, keyPrefix: 'restart:' });
    try {
      await backend.putQueue('q', settings);
      let wakes = 0;
      backend.watch('q', () => wakes++);
      await waitUntil(() => wakes > 0, 'the subscription is in force');
      server.kill('SIGKILL');
      await once(server, 'exit');
      server = await start();
      const before = wakes;
      await waitUntil(() => wakes > before, 'a wake-up after the reconnect', 15_000);
      // The restarted server lost everything (no persistence) and has no scripts loaded.
      assert.equal(await backend.getQueue('q'), undefined);
      await backend.putQueue('q', settings);
      const woken = wakes;
      await backend.send('q', [msg('after')], T0);
      await waitUntil(() => wakes > woken, 'a wake-up for the new message');
      const { messages } = await backend.receive('q', { max: 1, lockMs: 1000, now: T0 });
      assert.equal(messages[0]?.id, 'after');
    } finally {
      await backend.close();
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    }
  });
});

/** A small deterministic generator (mulberry32), so a failing seed can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs the same random operations (sends with duplicates, priorities, schedules, TTLs and sessions; receives,
 * settlements with current and stale tokens, renewals, resends and purges of dead letters) on both backends at
 * the same times, and requires the same answers.
 */
async function compareWithMemory(seed: number, backend: MessageBackend, reference: MessageBackend) {
  const random = generator(seed);
  const below = (n: number) => Math.floor(random() * n);
  const pick = <T>(values: readonly T[]): T => values[below(values.length)] as T;
  const queue = `q${seed}`;
  const settings: QueueSettings = {
    lockDurationMs: 30,
    maxDeliveryCount: 1 + below(3),
    duplicateWindowMs: pick([0, 40]),
    defaultTtlMs: pick([undefined, 60]),
    maxMessageBytes: 1024,
    priority: pick([{ policy: 'strict' }, { policy: 'weighted', agingMs: 5 }] as const),
    sessions: random() < 0.5,
    onSessionDeadLetter: pick(['hold', 'continue'] as const),
  };
  const both = async <T>(run: (b: MessageBackend) => Promise<T>): Promise<[T, T]> => [
    await run(backend),
    await run(reference),
  ];
  const same = async <T>(what: string, run: (b: MessageBackend) => Promise<T>): Promise<T> => {
    const [actual, expected] = await both(run);
    assert.deepEqual(actual, expected, `seed ${seed}: ${what}`);
    return actual;
  };
  const withoutToken = (messages: readonly StoredMessage[]) =>
    messages.map((m) => ({ ...m, lockToken: undefined }));
  await same('putQueue', (b) => b.putQueue(queue, settings));
  // Tokens of every delivery so far, in the same order on both backends (older ones are stale).
  const tokens: [string, string][] = [];
  const someTokens = () =>
    Array.from({ length: 1 + below(2) }, () => tokens[below(tokens.length)] as [string, string]);
  let now = T0;
  for (let step = 0; step < 250; step++) {
    now += below(6);
    const op = below(100);
    const what = `step ${step}, op ${op}`;
    if (op < 30) {
      const batch: OutgoingMessage[] = Array.from({ length: 1 + below(4) }, () => ({
        id: `m${below(12)}`,
        body: new Uint8Array([below(256)]),
        priority: random() < 0.5 ? below(10) : undefined,
        availableAt: random() < 0.2 ? now + below(30) : undefined,
        expiresAt: random() < 0.2 ? now + below(80) : undefined,
        sessionId: pick([undefined, 'A', 'B', '']),
        subject: random() < 0.2 ? 'subject' : undefined,
      }));
      await same(`${what} send`, (b) => b.send(queue, batch, now));
    } else if (op < 55) {
      const request = { max: 1 + below(4), lockMs: 5 + below(25), now };
      const [actual, expected] = await both((b) => b.receive(queue, request));
      assert.deepEqual(
        { ...actual, messages: withoutToken(actual.messages) },
        { ...expected, messages: withoutToken(expected.messages) },
        `seed ${seed}: ${what} receive`,
      );
      actual.messages.forEach((m, i) => {
        tokens.push([m.lockToken, expected.messages[i]?.lockToken as string]);
      });
    } else if (op < 70 && tokens.length > 0) {
      const chosen = someTokens();
      const [actual, expected] = await both((b) =>
        b.complete(
          queue,
          chosen.map((pair) => pair[b === backend ? 0 : 1]),
          now,
        ),
      );
      assert.deepEqual(actual, expected, `seed ${seed}: ${what} complete`);
    } else if (op < 78 && tokens.length > 0) {
      const [token] = someTokens();
      const delay = pick([0, 0, 10]);
      const [actual, expected] = await both((b) =>
        b.abandon(queue, (token as [string, string])[b === backend ? 0 : 1], delay, now),
      );
      assert.equal(actual, expected, `seed ${seed}: ${what} abandon`);
    } else if (op < 83 && tokens.length > 0) {
      const [token] = someTokens();
      const description = pick([undefined, 'why']);
      const [actual, expected] = await both((b) =>
        b.deadLetter(queue, (token as [string, string])[b === backend ? 0 : 1], 'reason', description, now),
      );
      assert.equal(actual, expected, `seed ${seed}: ${what} deadLetter`);
    } else if (op < 87 && tokens.length > 0) {
      const chosen = someTokens();
      const lockMs = 5 + below(25);
      const [actual, expected] = await both((b) =>
        b.renewLocks(
          queue,
          chosen.map((pair) => pair[b === backend ? 0 : 1]),
          lockMs,
          now,
        ),
      );
      assert.deepEqual(actual, expected, `seed ${seed}: ${what} renew`);
    } else if (op < 92) {
      const dead = await same(`${what} listDeadLetters`, (b) => b.listDeadLetters(queue, { limit: 50 }));
      const chosen = dead.filter(() => random() < 0.5).map((d) => d.sequence);
      const purged = random() < 0.5 ? chosen : undefined;
      if (random() < 0.8) await same(`${what} resend`, (b) => b.resendDeadLetters(queue, chosen, now));
      else await same(`${what} purge`, (b) => b.purgeDeadLetters(queue, purged, now));
    } else if (op < 96) {
      const query = { limit: 1 + below(10), afterSequence: random() < 0.5 ? undefined : below(20) };
      await same(`${what} peek`, (b) => b.peek(queue, query));
    } else {
      await same(`${what} stats`, (b) => b.stats(queue, now));
    }
  }
  await same('final peek', (b) => b.peek(queue, { limit: 1000 }));
  await same('final dead letters', (b) => b.listDeadLetters(queue, { limit: 1000 }));
}
