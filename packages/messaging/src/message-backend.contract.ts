import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  completeAndReceive,
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
  type DeliveredMessage,
  type MessageBackend,
  type OutgoingMessage,
  type QueueSettings,
} from './backend.js';
import { UnknownQueueError, UnknownTopicError } from './errors.js';
import { sessionHoldContract } from './session-hold.contract.js';

export interface ContractOptions {
  /**
   * Opens another backend on the storage of one that was closed, as a restarted process would; absent for a
   * backend that keeps nothing once closed (memory).
   */
  readonly reopen?: (closed: MessageBackend) => Promise<MessageBackend>;
}

/**
 * The executable definition of the MessageBackend port. Every adapter's test file calls this with a factory; the
 * suite opens one backend, gives every test its own queues and topics, and passes time explicitly (`now`), so it
 * needs no clock and runs the same on every backend.
 */
export function messageBackendContract(
  label: string,
  open: () => Promise<MessageBackend>,
  options: ContractOptions = {},
): void {
  describe(`MessageBackend contract: ${label}`, () => {
    let backend: MessageBackend;
    let counter = 0;
    const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++counter}`;
    const T0 = 1_750_000_000_000;
    const LOCK = 30_000;

    before(async () => {
      backend = await open();
    });
    after(async () => {
      await backend?.close();
    });

    const defaults: QueueSettings = {
      lockDurationMs: LOCK,
      maxDeliveryCount: 10,
      duplicateWindowMs: 60_000,
      defaultTtlMs: undefined,
      maxMessageBytes: 256 * 1024,
      priority: { policy: 'strict' },
      sessions: false,
      onSessionDeadLetter: 'hold',
    };

    async function newQueue(settings: Partial<QueueSettings> = {}): Promise<string> {
      const name = unique('q');
      await backend.putQueue(name, { ...defaults, ...settings });
      return name;
    }

    const text = (value: string) => new TextEncoder().encode(value);
    const read = (body: Uint8Array) => new TextDecoder().decode(body);
    const msg = (id: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
      id,
      body: text(id),
      ...extra,
    });

    async function receiveIds(queue: string, now: number, max = 100, lockMs = LOCK): Promise<string[]> {
      const result = await backend.receive(queue, { max, lockMs, now });
      return result.messages.map((m) => m.id);
    }

    async function receiveOne(queue: string, now: number, lockMs = LOCK): Promise<DeliveredMessage> {
      const { messages } = await backend.receive(queue, { max: 1, lockMs, now });
      assert.equal(messages.length, 1, 'expected one message');
      return messages[0] as DeliveredMessage;
    }

    describe('queues', () => {
      it('creates, reads, replaces, lists and deletes queues', async () => {
        const name = unique('admin');
        assert.equal(await backend.getQueue(name), undefined);
        await backend.putQueue(name, defaults);
        assert.deepEqual(await backend.getQueue(name), defaults);
        const changed: QueueSettings = {
          ...defaults,
          maxDeliveryCount: 3,
          defaultTtlMs: 5000,
          priority: { policy: 'weighted', agingMs: 250 },
          sessions: true,
          onSessionDeadLetter: 'continue',
        };
        await backend.putQueue(name, changed);
        assert.deepEqual(await backend.getQueue(name), changed);
        assert.ok((await backend.listQueues()).includes(name));
        assert.equal(await backend.deleteQueue(name), true);
        assert.equal(await backend.deleteQueue(name), false);
        assert.equal(await backend.getQueue(name), undefined);
        assert.ok(!(await backend.listQueues()).includes(name));
      });

      it('rejects operations on unknown queues with UnknownQueueError', async () => {
        const name = unique('missing');
        await assert.rejects(backend.send(name, [msg('a')], T0), UnknownQueueError);
        await assert.rejects(backend.receive(name, { max: 1, lockMs: LOCK, now: T0 }), UnknownQueueError);
        await assert.rejects(backend.complete(name, ['x'], T0), UnknownQueueError);
        await assert.rejects(backend.abandon(name, 'x', 0, T0), UnknownQueueError);
        await assert.rejects(backend.stats(name, T0), UnknownQueueError);
        await assert.rejects(backend.peek(name, { limit: 1 }), UnknownQueueError);
        await assert.rejects(backend.listDeadLetters(name, { limit: 1 }), UnknownQueueError);
        await assert.rejects(backend.getSessionState(name, 's'), UnknownQueueError);
      });

      it('deleting a queue deletes its messages', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a')], T0);
        await backend.deleteQueue(queue);
        await backend.putQueue(queue, defaults);
        assert.deepEqual(await receiveIds(queue, T0), []);
        assert.equal((await backend.stats(queue, T0)).length, 0);
      });
    });

    describe('send and receive', () => {
      it('round-trips every property and the exact body bytes', async () => {
        const queue = await newQueue();
        const body = Uint8Array.from({ length: 256 }, (_, i) => i);
        const [outcome] = await backend.send(
          queue,
          [
            {
              id: 'm-1',
              body,
              contentType: 'application/octet-stream',
              correlationId: 'c-1',
              replyTo: 'replies',
              subject: 'order.placed',
              headers: { tenant: 'contoso', 'x-empty': '' },
              priority: 0,
            },
          ],
          T0,
        );
        assert.equal(outcome?.accepted, true);
        assert.equal(outcome?.id, 'm-1');
        assert.equal(typeof outcome?.sequence, 'number');
        const m = await receiveOne(queue, T0 + 5, 1000);
        assert.equal(m.id, 'm-1');
        assert.deepEqual(new Uint8Array(m.body), body);
        assert.equal(m.contentType, 'application/octet-stream');
        assert.equal(m.correlationId, 'c-1');
        assert.equal(m.replyTo, 'replies');
        assert.equal(m.subject, 'order.placed');
        assert.deepEqual(m.headers, { tenant: 'contoso', 'x-empty': '' });
        assert.equal(m.priority, 0);
        assert.equal(m.sequence, outcome?.sequence);
        assert.equal(m.enqueuedAt, T0);
        assert.equal(m.deliveryCount, 1);
        assert.equal(m.state, 'locked');
        assert.equal(m.lockedUntil, T0 + 5 + 1000);
        assert.equal(typeof m.lockToken, 'string');
        assert.equal(m.expiresAt, undefined);
      });

      it('keeps the bodies of one send apart, empty ones included', async () => {
        const queue = await newQueue();
        const bodies = [
          Uint8Array.from({ length: 256 }, (_, i) => 255 - i),
          new Uint8Array(0),
          Uint8Array.from([0, 1, 2]),
          new Uint8Array(0),
        ];
        await backend.send(
          queue,
          bodies.map((body, i) => ({ id: `b-${i}`, body })),
          T0,
        );
        const received = (await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 })).messages;
        assert.deepEqual(
          received.map((m) => [m.id, [...new Uint8Array(m.body)]]),
          bodies.map((body, i) => [`b-${i}`, [...body]]),
        );
      });

      it('leaves absent optional properties absent', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('plain')], T0);
        const m = await receiveOne(queue, T0);
        assert.equal(m.contentType ?? undefined, undefined);
        assert.equal(m.correlationId ?? undefined, undefined);
        assert.equal(m.subject ?? undefined, undefined);
        assert.equal(m.sessionId ?? undefined, undefined);
        assert.deepEqual(m.headers ?? {}, {});
        assert.equal(read(m.body), 'plain');
      });

      it('delivers in send order, sequences grow, and receive honours max', async () => {
        const queue = await newQueue();
        const outcomes = await backend.send(
          queue,
          ['a', 'b', 'c', 'd', 'e'].map((id) => msg(id)),
          T0,
        );
        const sequences = outcomes.map((o) => o.sequence as number);
        assert.deepEqual(
          [...sequences].sort((a, b) => a - b),
          sequences,
        );
        assert.equal(new Set(sequences).size, 5);
        await backend.send(queue, [msg('f')], T0 + 1);
        assert.deepEqual(await receiveIds(queue, T0 + 2, 2), ['a', 'b']);
        assert.deepEqual(await receiveIds(queue, T0 + 2, 10), ['c', 'd', 'e', 'f']);
        assert.deepEqual(await receiveIds(queue, T0 + 2, 10), []);
      });

      it('reports nothing pending on an empty queue', async () => {
        const queue = await newQueue();
        const result = await backend.receive(queue, { max: 5, lockMs: LOCK, now: T0 });
        assert.deepEqual(result.messages, []);
        assert.equal(result.nextDueAt, undefined);
      });

      it('accepts an empty batch', async () => {
        const queue = await newQueue();
        assert.deepEqual(await backend.send(queue, [], T0), []);
      });

      it('sends a large batch atomically and in order', async () => {
        const queue = await newQueue();
        const ids = Array.from({ length: 500 }, (_, i) => `m${i}`);
        const outcomes = await backend.send(
          queue,
          ids.map((id) => msg(id)),
          T0,
        );
        assert.ok(outcomes.every((o) => o.accepted));
        const received: string[] = [];
        for (let i = 0; i < 10 && received.length < 500; i++)
          received.push(...(await receiveIds(queue, T0, 100)));
        assert.deepEqual(received, ids);
      });
    });

    describe('peek-lock', () => {
      it('hides a locked message until its lock expires, then redelivers it with a new token and count', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a')], T0);
        const first = await receiveOne(queue, T0, 1000);
        assert.deepEqual(await receiveIds(queue, T0 + 999), []);
        const result = await backend.receive(queue, { max: 1, lockMs: 1000, now: T0 + 500 });
        assert.equal(result.nextDueAt, T0 + 1000, 'an empty receive says when the lock expires');
        const second = await receiveOne(queue, T0 + 1000, 1000);
        assert.equal(second.id, 'a');
        assert.equal(second.deliveryCount, 2);
        assert.notEqual(second.lockToken, first.lockToken);
        assert.deepEqual(await backend.complete(queue, [first.lockToken], T0 + 1001), ['lost']);
        assert.deepEqual(await backend.complete(queue, [second.lockToken], T0 + 1001), ['ok']);
        assert.deepEqual(await receiveIds(queue, T0 + 10_000), []);
      });

      it('completes once: a second complete with the same token is lost', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a'), msg('b')], T0);
        const { messages } = await backend.receive(queue, { max: 2, lockMs: LOCK, now: T0 });
        const tokens = messages.map((m) => m.lockToken);
        assert.deepEqual(await backend.complete(queue, tokens, T0), ['ok', 'ok']);
        assert.deepEqual(await backend.complete(queue, tokens, T0), ['lost', 'lost']);
        assert.equal((await backend.stats(queue, T0)).length, 0);
      });

      it('honours a token whose lock expired while nobody else took the message', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a')], T0);
        const m = await receiveOne(queue, T0, 1000);
        assert.deepEqual(await backend.complete(queue, [m.lockToken], T0 + 5000), ['ok']);
        assert.deepEqual(await receiveIds(queue, T0 + 6000), []);
      });

      it('renews locks, and refuses to renew a lost one', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a')], T0);
        const m = await receiveOne(queue, T0, 1000);
        const [until] = await backend.renewLocks(queue, [m.lockToken], 5000, T0 + 900);
        assert.equal(until, T0 + 900 + 5000);
        assert.deepEqual(await receiveIds(queue, T0 + 2000), [], 'the renewed lock still holds');
        assert.deepEqual(await receiveIds(queue, T0 + 5899), []);
        const again = await receiveOne(queue, T0 + 5900);
        assert.equal(again.deliveryCount, 2);
        assert.deepEqual(await backend.renewLocks(queue, [m.lockToken, again.lockToken], 1000, T0 + 6000), [
          undefined,
          T0 + 7000,
        ]);
      });

      it('abandon makes the message available again at once, ranked from then, keeping its count', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a'), msg('b')], T0);
        const a = await receiveOne(queue, T0);
        assert.equal(await backend.abandon(queue, a.lockToken, 0, T0 + 1), 'ok');
        assert.equal(await backend.abandon(queue, a.lockToken, 0, T0 + 1), 'lost');
        const { messages } = await backend.receive(queue, { max: 2, lockMs: LOCK, now: T0 + 2 });
        assert.deepEqual(
          messages.map((m) => [m.id, m.deliveryCount]),
          [
            ['b', 1],
            ['a', 2],
          ],
        );
      });

      it('abandon with a delay hides the message until then', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a')], T0);
        const a = await receiveOne(queue, T0);
        await backend.abandon(queue, a.lockToken, 5000, T0 + 10);
        const stats = await backend.stats(queue, T0 + 10);
        assert.equal(stats.scheduled, 1);
        const early = await backend.receive(queue, { max: 1, lockMs: LOCK, now: T0 + 5009 });
        assert.deepEqual(early.messages, []);
        assert.equal(early.nextDueAt, T0 + 5010);
        assert.equal((await receiveOne(queue, T0 + 5010)).deliveryCount, 2);
      });

      it('dead-letters on abandon after the last allowed delivery', async () => {
        const queue = await newQueue({ maxDeliveryCount: 2 });
        await backend.send(queue, [msg('poison')], T0);
        for (let delivery = 1; delivery <= 2; delivery++) {
          const m = await receiveOne(queue, T0 + delivery);
          assert.equal(m.id, 'poison');
          assert.equal(m.deliveryCount, delivery);
          await backend.abandon(queue, m.lockToken, 0, T0 + delivery);
        }
        await backend.send(queue, [msg('fine')], T0 + 5);
        assert.deepEqual(await receiveIds(queue, T0 + 10), ['fine'], 'the poison message left the queue');
        const [dead] = await backend.listDeadLetters(queue, { limit: 10 });
        assert.equal(dead?.id, 'poison');
        assert.equal(dead?.deadLetterReason, DEAD_LETTER_MAX_DELIVERIES);
        assert.equal(dead?.deliveryCount, 2);
        assert.equal(dead?.deadLetteredAt, T0 + 2);
        assert.equal(read(dead?.body ?? new Uint8Array()), 'poison');
      });

      it('dead-letters when the lock of the last allowed delivery expires', async () => {
        const queue = await newQueue({ maxDeliveryCount: 1 });
        await backend.send(queue, [msg('crashy')], T0);
        await receiveOne(queue, T0, 1000);
        assert.deepEqual(await receiveIds(queue, T0 + 1000), []);
        const stats = await backend.stats(queue, T0 + 1000);
        assert.equal(stats.deadLettered, 1);
        assert.equal(stats.length, 0);
        const [dead] = await backend.listDeadLetters(queue, { limit: 1 });
        assert.equal(dead?.deadLetterReason, DEAD_LETTER_MAX_DELIVERIES);
      });

      it('dead-letters on request with a reason and description', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('bad')], T0);
        const m = await receiveOne(queue, T0);
        assert.equal(
          await backend.deadLetter(queue, m.lockToken, 'validation', 'price is negative', T0 + 7),
          'ok',
        );
        assert.equal(await backend.deadLetter(queue, m.lockToken, 'again', undefined, T0 + 8), 'lost');
        const [dead] = await backend.listDeadLetters(queue, { limit: 1 });
        assert.equal(dead?.deadLetterReason, 'validation');
        assert.equal(dead?.deadLetterDescription, 'price is negative');
        assert.equal(dead?.deadLetteredAt, T0 + 7);
        assert.equal(dead?.deliveryCount, 1);
      });
    });

    describe('dead letters', () => {
      async function queueWithDeadLetters(count: number): Promise<{ queue: string; sequences: number[] }> {
        const queue = await newQueue();
        await backend.send(
          queue,
          Array.from({ length: count }, (_, i) => msg(`d${i}`)),
          T0,
        );
        const { messages } = await backend.receive(queue, { max: count, lockMs: LOCK, now: T0 });
        for (const m of messages) await backend.deadLetter(queue, m.lockToken, 'test', undefined, T0);
        return { queue, sequences: messages.map((m) => m.sequence) };
      }

      it('lists dead letters by sequence with paging', async () => {
        const { queue, sequences } = await queueWithDeadLetters(5);
        const page1 = await backend.listDeadLetters(queue, { limit: 2 });
        assert.deepEqual(
          page1.map((d) => d.id),
          ['d0', 'd1'],
        );
        const page2 = await backend.listDeadLetters(queue, { limit: 10, afterSequence: page1[1]?.sequence });
        assert.deepEqual(
          page2.map((d) => d.id),
          ['d2', 'd3', 'd4'],
        );
        assert.deepEqual(
          page2.map((d) => d.sequence),
          sequences.slice(2),
        );
      });

      it('resends dead letters as fresh deliveries', async () => {
        const { queue, sequences } = await queueWithDeadLetters(3);
        assert.equal(
          await backend.resendDeadLetters(queue, [sequences[0] as number, sequences[2] as number], T0 + 1),
          2,
        );
        assert.equal(
          await backend.resendDeadLetters(queue, [sequences[0] as number], T0 + 1),
          0,
          'already resent',
        );
        const { messages } = await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 + 2 });
        assert.deepEqual(
          messages.map((m) => m.id),
          ['d0', 'd2'],
        );
        assert.ok(messages.every((m) => m.deliveryCount === 1));
        assert.deepEqual(
          (await backend.listDeadLetters(queue, { limit: 10 })).map((d) => d.id),
          ['d1'],
        );
      });

      it('purges chosen dead letters or all of them', async () => {
        const { queue, sequences } = await queueWithDeadLetters(4);
        assert.equal(await backend.purgeDeadLetters(queue, [sequences[1] as number], T0), 1);
        assert.equal((await backend.stats(queue, T0)).deadLettered, 3);
        assert.equal(await backend.purgeDeadLetters(queue, undefined, T0), 3);
        assert.deepEqual(await backend.listDeadLetters(queue, { limit: 10 }), []);
      });
    });

    describe('scheduling and time-to-live', () => {
      it('keeps a scheduled message invisible until it is due', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('later', { availableAt: T0 + 60_000 }), msg('now')], T0);
        assert.deepEqual(await receiveIds(queue, T0, 10, 120_000), ['now']);
        const stats = await backend.stats(queue, T0);
        assert.equal(stats.scheduled, 1);
        const early = await backend.receive(queue, { max: 1, lockMs: LOCK, now: T0 + 59_999 });
        assert.deepEqual(early.messages, []);
        assert.equal(early.nextDueAt, T0 + 60_000);
        assert.deepEqual(await receiveIds(queue, T0 + 60_000), ['later']);
      });

      it('orders messages by when they became available', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('scheduled', { availableAt: T0 + 100 })], T0);
        await backend.send(queue, [msg('immediate')], T0 + 50);
        await backend.send(queue, [msg('last')], T0 + 150);
        assert.deepEqual(await receiveIds(queue, T0 + 200), ['immediate', 'scheduled', 'last']);
      });

      it('dead-letters an expired message instead of delivering it', async () => {
        const queue = await newQueue();
        await backend.send(
          queue,
          [msg('short', { expiresAt: T0 + 1000 }), msg('long', { expiresAt: T0 + 10_000 })],
          T0,
        );
        assert.deepEqual(await receiveIds(queue, T0 + 1000), ['long']);
        const [dead] = await backend.listDeadLetters(queue, { limit: 5 });
        assert.equal(dead?.id, 'short');
        assert.equal(dead?.deadLetterReason, DEAD_LETTER_EXPIRED);
        assert.equal(dead?.expiresAt, T0 + 1000);
      });

      it('skips an expired message in the middle of a pick and keeps the order of the rest', async () => {
        const queue = await newQueue();
        await backend.send(
          queue,
          [msg('a'), msg('gone', { expiresAt: T0 + 1000 }), msg('b'), msg('c'), msg('d')],
          T0,
        );
        assert.deepEqual(await receiveIds(queue, T0 + 1000, 4), ['a', 'b', 'c', 'd']);
        const [dead] = await backend.listDeadLetters(queue, { limit: 5 });
        assert.equal(dead?.id, 'gone');
      });

      it('applies the queue default TTL to messages sent without one', async () => {
        const queue = await newQueue({ defaultTtlMs: 2000 });
        await backend.send(queue, [msg('default'), msg('own', { expiresAt: T0 + 10_000 })], T0);
        const peeked = await backend.peek(queue, { limit: 5 });
        assert.deepEqual(
          peeked.map((m) => m.expiresAt),
          [T0 + 2000, T0 + 10_000],
        );
        assert.deepEqual(await receiveIds(queue, T0 + 2000), ['own']);
      });

      it('never delivers a scheduled message that expires before it is due', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('too-late', { availableAt: T0 + 5000, expiresAt: T0 + 1000 })], T0);
        assert.deepEqual(await receiveIds(queue, T0 + 5000), []);
        const [dead] = await backend.listDeadLetters(queue, { limit: 1 });
        assert.equal(dead?.deadLetterReason, DEAD_LETTER_EXPIRED);
      });
    });

    describe('duplicate detection', () => {
      it('accepts a message id once within the window, also within one batch', async () => {
        const queue = await newQueue({ duplicateWindowMs: 10_000 });
        const first = await backend.send(queue, [msg('x'), msg('y'), msg('x')], T0);
        assert.deepEqual(
          first.map((o) => o.accepted),
          [true, true, false],
        );
        assert.equal(first[2]?.sequence, undefined);
        const second = await backend.send(queue, [msg('x')], T0 + 9999);
        assert.equal(second[0]?.accepted, false);
        assert.deepEqual(await receiveIds(queue, T0 + 9999), ['x', 'y']);
      });

      it('forgets ids after the window, even when the first copy was completed', async () => {
        const queue = await newQueue({ duplicateWindowMs: 10_000 });
        await backend.send(queue, [msg('x')], T0);
        const m = await receiveOne(queue, T0);
        await backend.complete(queue, [m.lockToken], T0);
        assert.equal((await backend.send(queue, [msg('x')], T0 + 5000))[0]?.accepted, false);
        assert.equal((await backend.send(queue, [msg('x')], T0 + 10_000))[0]?.accepted, true);
      });

      it('accepts every copy when the window is 0', async () => {
        const queue = await newQueue({ duplicateWindowMs: 0 });
        const outcomes = await backend.send(queue, [msg('x'), msg('x')], T0);
        assert.deepEqual(
          outcomes.map((o) => o.accepted),
          [true, true],
        );
        assert.deepEqual(await receiveIds(queue, T0), ['x', 'x']);
      });
    });

    describe('priority', () => {
      it('strict: highest priority first, FIFO within a priority', async () => {
        const queue = await newQueue({ priority: { policy: 'strict' } });
        await backend.send(
          queue,
          [
            msg('low-1'),
            msg('high', { priority: 9 }),
            msg('mid-1', { priority: 5 }),
            msg('low-2'),
            msg('mid-2', { priority: 5 }),
          ],
          T0,
        );
        await backend.send(queue, [msg('late-high', { priority: 9 })], T0 + 3_600_000);
        assert.deepEqual(await receiveIds(queue, T0 + 3_600_000), [
          'high',
          'late-high',
          'mid-1',
          'mid-2',
          'low-1',
          'low-2',
        ]);
      });

      it('weighted: a low message overtakes newer high ones once it waited agingMs per priority step', async () => {
        const queue = await newQueue({ priority: { policy: 'weighted', agingMs: 1000 } });
        await backend.send(queue, [msg('low', { priority: 0 })], T0);
        await backend.send(queue, [msg('high-soon', { priority: 9 })], T0 + 5000);
        await backend.send(queue, [msg('high-late', { priority: 9 })], T0 + 10_000);
        // ranks: low T0 + 9000, high-soon T0 + 5000, high-late T0 + 10000
        assert.deepEqual(await receiveIds(queue, T0 + 10_000), ['high-soon', 'low', 'high-late']);
      });

      it('weighted re-ranks an abandoned message from when it became available again', async () => {
        const queue = await newQueue({ priority: { policy: 'weighted', agingMs: 1000 } });
        await backend.send(queue, [msg('a', { priority: 9 })], T0);
        const a = await receiveOne(queue, T0);
        await backend.send(queue, [msg('b', { priority: 9 })], T0 + 100);
        await backend.abandon(queue, a.lockToken, 0, T0 + 200);
        assert.deepEqual(await receiveIds(queue, T0 + 300), ['b', 'a']);
      });
    });

    describe('sessions', () => {
      const s = (id: string, session: string, extra: Partial<OutgoingMessage> = {}) =>
        msg(id, { sessionId: session, ...extra });

      it('delivers one message per session at a time, sessions in parallel, in order', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('b1', 'B'), s('a2', 'A'), s('b2', 'B'), s('a3', 'A')], T0);
        const stats = await backend.stats(queue, T0);
        assert.equal(stats.available, 2);
        assert.equal(stats.waiting, 3);
        const { messages } = await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 });
        assert.deepEqual(
          messages.map((m) => m.id),
          ['a1', 'b1'],
        );
        assert.equal(messages[0]?.sessionId, 'A');
        assert.deepEqual(await receiveIds(queue, T0), [], 'nothing else while both heads are locked');
        await backend.complete(queue, [messages[0]?.lockToken as string], T0 + 1);
        assert.deepEqual(await receiveIds(queue, T0 + 2), ['a2']);
      });

      it("completeAndReceive completes a head and hands over its session's next message in the same call", async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A')], T0);
        const a1 = await receiveOne(queue, T0);
        const next = await completeAndReceive(backend, queue, a1.lockToken, {
          max: 5,
          lockMs: LOCK,
          now: T0 + 1,
        });
        assert.equal(next.outcome, 'ok');
        assert.deepEqual(
          next.received.messages.map((m) => [m.id, m.deliveryCount]),
          [['a2', 1]],
          'only the new head: a3 waits behind it',
        );
        const stats = await backend.stats(queue, T0 + 1);
        assert.equal(stats.locked, 1);
        assert.equal(stats.waiting, 1);
        // A lock already settled is lost: nothing is completed twice and nothing is received.
        const again = await completeAndReceive(backend, queue, a1.lockToken, {
          max: 5,
          lockMs: LOCK,
          now: T0 + 2,
        });
        assert.deepEqual(again, { outcome: 'lost', received: { messages: [], nextDueAt: undefined } });
        assert.equal((await backend.stats(queue, T0 + 2)).locked, 1, 'a2 stays locked, a3 waiting');
        const a2 = next.received.messages[0] as DeliveredMessage;
        const last = await completeAndReceive(backend, queue, a2.lockToken, {
          max: 5,
          lockMs: LOCK,
          now: T0 + 3,
        });
        assert.deepEqual(
          last.received.messages.map((m) => m.id),
          ['a3'],
        );
      });

      it('keeps an abandoned head in front of its session', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A')], T0);
        const a1 = await receiveOne(queue, T0);
        await backend.abandon(queue, a1.lockToken, 0, T0 + 1);
        const again = await receiveOne(queue, T0 + 2);
        assert.equal(again.id, 'a1');
        assert.equal(again.deliveryCount, 2);
      });

      it('redelivers a crashed head before the rest of its session', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('b1', 'B')], T0);
        await backend.receive(queue, { max: 1, lockMs: 1000, now: T0 });
        const later = await backend.receive(queue, { max: 10, lockMs: 1000, now: T0 + 1000 });
        assert.deepEqual(later.messages.map((m) => m.id).sort(), ['a1', 'b1']);
        assert.equal(later.messages.find((m) => m.id === 'a1')?.deliveryCount, 2);
      });

      it("with onSessionDeadLetter 'continue', moves on to the next message when the head is dead-lettered", async () => {
        const queue = await newQueue({
          sessions: true,
          maxDeliveryCount: 1,
          onSessionDeadLetter: 'continue',
        });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A')], T0);
        const a1 = await receiveOne(queue, T0);
        await backend.abandon(queue, a1.lockToken, 0, T0 + 1);
        assert.deepEqual(await receiveIds(queue, T0 + 2), ['a2']);
        const [dead] = await backend.listDeadLetters(queue, { limit: 1 });
        assert.deepEqual([dead?.id, dead?.holdsSession], ['a1', false]);
      });

      it('gates scheduled session messages behind the head and keeps their schedule', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A', { availableAt: T0 + 5000 })], T0);
        const a1 = await receiveOne(queue, T0);
        await backend.complete(queue, [a1.lockToken], T0 + 10);
        const early = await backend.receive(queue, { max: 1, lockMs: LOCK, now: T0 + 20 });
        assert.deepEqual(early.messages, []);
        assert.equal(early.nextDueAt, T0 + 5000);
        assert.deepEqual(await receiveIds(queue, T0 + 5000), ['a2']);
      });

      it('does not order messages without a session id', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [msg('x'), msg('y')], T0);
        assert.deepEqual(await receiveIds(queue, T0), ['x', 'y']);
      });

      it('ignores session ids on queues without sessions', async () => {
        const queue = await newQueue({ sessions: false });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A')], T0);
        assert.deepEqual(await receiveIds(queue, T0), ['a1', 'a2']);
      });

      it("with onSessionDeadLetter 'continue', resends a dead-lettered session message behind the current head", async () => {
        const queue = await newQueue({ sessions: true, onSessionDeadLetter: 'continue' });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A')], T0);
        const a1 = await receiveOne(queue, T0);
        await backend.deadLetter(queue, a1.lockToken, 'test', undefined, T0);
        const a2 = await receiveOne(queue, T0 + 1);
        assert.equal(a2.id, 'a2');
        await backend.resendDeadLetters(queue, [a1.sequence], T0 + 2);
        assert.deepEqual(await receiveIds(queue, T0 + 3), [], 'a1 waits behind the locked a2');
        await backend.complete(queue, [a2.lockToken], T0 + 4);
        assert.deepEqual(await receiveIds(queue, T0 + 5), ['a1']);
      });

      it('stores, replaces and clears session state', async () => {
        const queue = await newQueue({ sessions: true });
        assert.equal(await backend.getSessionState(queue, 'A'), undefined);
        await backend.setSessionState(queue, 'A', text('step-1'));
        assert.equal(read((await backend.getSessionState(queue, 'A')) as Uint8Array), 'step-1');
        await backend.setSessionState(queue, 'A', text('step-2'));
        assert.equal(read((await backend.getSessionState(queue, 'A')) as Uint8Array), 'step-2');
        assert.equal(await backend.getSessionState(queue, 'B'), undefined);
        await backend.setSessionState(queue, 'A', undefined);
        assert.equal(await backend.getSessionState(queue, 'A'), undefined);
      });

      it('keeps session state while its messages come and go', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.setSessionState(queue, 'A', text('kept'));
        await backend.send(queue, [s('a1', 'A')], T0);
        const a1 = await receiveOne(queue, T0);
        await backend.complete(queue, [a1.lockToken], T0);
        assert.equal(read((await backend.getSessionState(queue, 'A')) as Uint8Array), 'kept');
      });
    });

    describe('session batches', () => {
      const s = (id: string, session: string, extra: Partial<OutgoingMessage> = {}) =>
        msg(id, { sessionId: session, ...extra });
      const batch = async (queue: string, now: number, sessionBatch: number, max = 100, lockMs = LOCK) =>
        (await backend.receive(queue, { max, lockMs, now, sessionBatch })).messages;
      const ids = (messages: readonly DeliveredMessage[]) => messages.map((m) => m.id);
      const token = (messages: readonly DeliveredMessage[], id: string) =>
        messages.find((m) => m.id === id)?.lockToken as string;

      it("locks a session's next due messages with its head, up to sessionBatch (the head alone without batches)", async () => {
        const queue = await newQueue({ sessions: true });
        const later = { availableAt: T0 + 5000 };
        await backend.send(
          queue,
          [
            s('a1', 'A'),
            s('a2', 'A'),
            s('a3', 'A'),
            s('a4', 'A', later),
            s('a5', 'A'),
            s('b1', 'B'),
            s('b2', 'B'),
          ],
          T0,
        );
        const received = await batch(queue, T0, 5);
        const batches = backend.sessionBatches === true;
        // a4 is not due yet: the batch stops in front of it, so nothing is ever handed out of order.
        assert.deepEqual(ids(received), batches ? ['a1', 'a2', 'a3', 'b1', 'b2'] : ['a1', 'b1']);
        assert.ok(received.every((m) => m.deliveryCount === 1));
        assert.equal(new Set(received.map((m) => m.lockToken)).size, received.length);
        const stats = await backend.stats(queue, T0);
        assert.deepEqual([stats.locked, stats.waiting], batches ? [5, 2] : [2, 5]);

        const bounded = await newQueue({ sessions: true });
        await backend.send(bounded, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A'), s('b1', 'B')], T0);
        // `max` bounds the heads; the messages locked with them come on top.
        assert.deepEqual(ids(await batch(bounded, T0, 2, 1)), batches ? ['a1', 'a2'] : ['a1']);
        assert.deepEqual(ids(await batch(bounded, T0, 2, 1)), ['b1']);
      });

      it('hands the session on once every message of the batch is completed, in or out of order', async (t) => {
        if (backend.sessionBatches !== true) return t.skip('no session batches');
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A'), s('a4', 'A')], T0);
        const first = await batch(queue, T0, 2);
        assert.deepEqual(ids(first), ['a1', 'a2']);
        await backend.complete(queue, [token(first, 'a2')], T0 + 1);
        assert.deepEqual(await receiveIds(queue, T0 + 2), [], 'a1 still holds the session');
        const next = await completeAndReceive(backend, queue, token(first, 'a1'), {
          max: 10,
          lockMs: LOCK,
          now: T0 + 3,
          sessionBatch: 2,
        });
        assert.deepEqual(ids(next.received.messages), ['a3', 'a4']);
      });

      it('sends the messages locked behind an abandoned one back to waiting, and keeps their order', async (t) => {
        if (backend.sessionBatches !== true) return t.skip('no session batches');
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A')], T0);
        const first = await batch(queue, T0, 3);
        await backend.complete(queue, [token(first, 'a1')], T0 + 1);
        assert.equal(await backend.abandon(queue, token(first, 'a2'), 0, T0 + 2), 'ok');
        assert.deepEqual(await backend.complete(queue, [token(first, 'a3')], T0 + 3), ['lost']);
        const again = await batch(queue, T0 + 4, 1);
        assert.deepEqual(
          again.map((m) => [m.id, m.deliveryCount]),
          [['a2', 2]],
        );
        await backend.complete(queue, [token(again, 'a2')], T0 + 5);
        const last = await batch(queue, T0 + 6, 3);
        assert.deepEqual(
          last.map((m) => [m.id, m.deliveryCount]),
          [['a3', 2]],
          'a3 counts the delivery it had in the batch',
        );
      });

      it('keeps an abandoned follower waiting while the head before it is held', async (t) => {
        if (backend.sessionBatches !== true) return t.skip('no session batches');
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A')], T0);
        const first = await batch(queue, T0, 3);
        await backend.abandon(queue, token(first, 'a2'), 0, T0 + 1);
        assert.deepEqual(await backend.complete(queue, [token(first, 'a3')], T0 + 2), ['lost']);
        assert.deepEqual(await receiveIds(queue, T0 + 3), []);
        await backend.complete(queue, [token(first, 'a1')], T0 + 4);
        assert.deepEqual(ids(await batch(queue, T0 + 5, 5)), ['a2', 'a3']);
      });

      it('gives an expired batch back in order: the head available, the rest waiting', async (t) => {
        if (backend.sessionBatches !== true) return t.skip('no session batches');
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A'), s('b1', 'B')], T0);
        const first = await batch(queue, T0, 2, 100, 1000);
        assert.deepEqual(ids(first), ['a1', 'a2', 'b1']);
        const later = await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 + 1000 });
        assert.deepEqual(later.messages.map((m) => [m.id, m.deliveryCount]).sort(), [
          ['a1', 2],
          ['b1', 2],
        ]);
        assert.deepEqual(await backend.complete(queue, [token(first, 'a2')], T0 + 1001), ['lost']);
        assert.equal((await backend.stats(queue, T0 + 1001)).waiting, 2);
      });

      it("with onSessionDeadLetter 'continue', dead-letters a message abandoned past its last delivery and moves on to the ones behind it", async (t) => {
        if (backend.sessionBatches !== true) return t.skip('no session batches');
        const queue = await newQueue({
          sessions: true,
          maxDeliveryCount: 1,
          onSessionDeadLetter: 'continue',
        });
        await backend.send(queue, [s('a1', 'A'), s('a2', 'A')], T0);
        const first = await batch(queue, T0, 2);
        await backend.abandon(queue, token(first, 'a1'), 0, T0 + 1);
        assert.equal((await backend.listDeadLetters(queue, { limit: 5 }))[0]?.id, 'a1');
        assert.deepEqual(await backend.complete(queue, [token(first, 'a2')], T0 + 2), ['lost']);
        assert.deepEqual(await receiveIds(queue, T0 + 3), ['a2']);
      });
    });

    sessionHoldContract({ backend: () => backend, newQueue, defaults, open, reopen: options.reopen });

    describe('peek and stats', () => {
      it('peeks in sequence order without delivering', async () => {
        const queue = await newQueue();
        await backend.send(queue, [msg('a'), msg('b', { availableAt: T0 + 1000 }), msg('c')], T0);
        const locked = await receiveOne(queue, T0);
        const peeked = await backend.peek(queue, { limit: 10 });
        assert.deepEqual(
          peeked.map((m) => [m.id, m.state, m.deliveryCount]),
          [
            ['a', 'locked', 1],
            ['b', 'scheduled', 0],
            ['c', 'available', 0],
          ],
        );
        const rest = await backend.peek(queue, { limit: 10, afterSequence: locked.sequence });
        assert.deepEqual(
          rest.map((m) => m.id),
          ['b', 'c'],
        );
        assert.deepEqual(await receiveIds(queue, T0), ['c'], 'peek locked nothing');
      });

      it('counts every state and the age of the oldest message', async () => {
        const queue = await newQueue({ sessions: true });
        await backend.send(queue, [msg('locked'), msg('dead')], T0);
        await backend.send(
          queue,
          [
            msg('scheduled', { availableAt: T0 + 60_000 }),
            msg('head', { sessionId: 'S' }),
            msg('behind', { sessionId: 'S' }),
          ],
          T0 + 100,
        );
        const { messages } = await backend.receive(queue, { max: 2, lockMs: LOCK, now: T0 + 200 });
        assert.deepEqual(
          messages.map((m) => m.id),
          ['locked', 'dead'],
        );
        await backend.deadLetter(queue, messages[1]?.lockToken as string, 'x', undefined, T0 + 200);
        assert.deepEqual(await backend.stats(queue, T0 + 1000), {
          available: 1,
          scheduled: 1,
          locked: 1,
          waiting: 1,
          deadLettered: 1,
          length: 4,
          oldestAgeMs: 1000,
        });
      });
    });

    describe('topics', () => {
      async function newTopic(name: string, retentionMs = 0): Promise<string> {
        const topic = `${unique('t')}.${name}`;
        await backend.putTopic(topic, { retentionMs });
        return topic;
      }

      it('creates, reads, lists and deletes topics', async () => {
        const topic = await newTopic('admin', 5000);
        assert.deepEqual(await backend.getTopic(topic), { retentionMs: 5000 });
        assert.ok((await backend.listTopics()).includes(topic));
        assert.equal(await backend.deleteTopic(topic), true);
        assert.equal(await backend.deleteTopic(topic), false);
        assert.equal(await backend.getTopic(topic), undefined);
      });

      it('rejects publishing to an unknown topic', async () => {
        await assert.rejects(backend.publish(unique('nope'), [msg('a')], T0), UnknownTopicError);
      });

      it('fans out to every matching subscription, each with its own copy', async () => {
        const base = unique('orders');
        const created = `${base}.created`;
        const shipped = `${base}.eu.shipped`;
        await backend.putTopic(created, { retentionMs: 0 });
        await backend.putTopic(shipped, { retentionMs: 0 });
        const exact = await newQueue();
        const oneLevel = await newQueue();
        const anyDepth = await newQueue();
        await backend.subscribe({ queue: exact, topics: [created], filter: undefined }, 'none', T0);
        await backend.subscribe({ queue: oneLevel, topics: [`${base}.*`], filter: undefined }, 'none', T0);
        await backend.subscribe({ queue: anyDepth, topics: [`${base}.#`], filter: undefined }, 'none', T0);
        const [outcome] = await backend.publish(created, [msg('o1')], T0);
        assert.deepEqual([...(outcome?.deliveredTo ?? [])].sort(), [exact, oneLevel, anyDepth].sort());
        await backend.publish(shipped, [msg('o2')], T0);
        assert.deepEqual(await receiveIds(exact, T0), ['o1']);
        assert.deepEqual(await receiveIds(oneLevel, T0), ['o1']);
        assert.deepEqual(await receiveIds(anyDepth, T0), ['o1', 'o2']);
      });

      it('applies subject and header filters', async () => {
        const topic = await newTopic('events');
        const bySubject = await newQueue();
        const byHeaders = await newQueue();
        const byPrefix = await newQueue();
        const byAbsence = await newQueue();
        await backend.subscribe(
          { queue: bySubject, topics: [topic], filter: { subject: ['a', 'b'] } },
          'none',
          T0,
        );
        await backend.subscribe(
          {
            queue: byHeaders,
            topics: [topic],
            filter: { headers: { region: 'eu', tier: ['gold', 'silver'] } },
          },
          'none',
          T0,
        );
        await backend.subscribe(
          { queue: byPrefix, topics: [topic], filter: { headers: { sku: { prefix: 'X-' } } } },
          'none',
          T0,
        );
        await backend.subscribe(
          { queue: byAbsence, topics: [topic], filter: { headers: { test: { exists: false } } } },
          'none',
          T0,
        );
        await backend.publish(
          topic,
          [
            msg('m1', { subject: 'a', headers: { region: 'eu', tier: 'gold', sku: 'X-1' } }),
            msg('m2', { subject: 'c', headers: { region: 'us', tier: 'gold', test: '1' } }),
            msg('m3', { subject: 'b', headers: { region: 'eu', tier: 'bronze', sku: 'Y-1' } }),
            msg('m4', { headers: { region: 'eu', tier: 'silver' } }),
          ],
          T0,
        );
        assert.deepEqual(await receiveIds(bySubject, T0), ['m1', 'm3']);
        assert.deepEqual(await receiveIds(byHeaders, T0), ['m1', 'm4']);
        assert.deepEqual(await receiveIds(byPrefix, T0), ['m1']);
        assert.deepEqual(await receiveIds(byAbsence, T0), ['m1', 'm3', 'm4']);
      });

      it('does not give a new subscription older messages unless it asks for retained ones', async () => {
        const topic = await newTopic('history', 60_000);
        await backend.publish(
          topic,
          [msg('old-1', { subject: 'keep' }), msg('old-2', { subject: 'skip' })],
          T0,
        );
        await backend.publish(topic, [msg('old-3', { subject: 'keep' })], T0 + 1000);
        const fresh = await newQueue();
        const replayAll = await newQueue();
        const replaySince = await newQueue();
        await backend.subscribe({ queue: fresh, topics: [topic], filter: undefined }, 'none', T0 + 2000);
        await backend.subscribe(
          { queue: replayAll, topics: [topic], filter: { subject: 'keep' } },
          'retained',
          T0 + 2000,
        );
        await backend.subscribe(
          { queue: replaySince, topics: [topic], filter: undefined },
          { since: T0 + 500 },
          T0 + 2000,
        );
        await backend.publish(topic, [msg('new', { subject: 'keep' })], T0 + 3000);
        assert.deepEqual(await receiveIds(fresh, T0 + 3000), ['new']);
        assert.deepEqual(await receiveIds(replayAll, T0 + 3000), ['old-1', 'old-3', 'new']);
        assert.deepEqual(await receiveIds(replaySince, T0 + 3000), ['old-3', 'new']);
      });

      it('drops retained messages after the retention period', async () => {
        const topic = await newTopic('short', 1000);
        await backend.publish(topic, [msg('gone')], T0);
        await backend.publish(topic, [msg('kept')], T0 + 1500);
        const queue = await newQueue();
        await backend.subscribe({ queue, topics: [topic], filter: undefined }, 'retained', T0 + 2000);
        assert.deepEqual(await receiveIds(queue, T0 + 2000), ['kept']);
      });

      it('stops delivery on unsubscribe and when the queue is deleted', async () => {
        const topic = await newTopic('stop');
        const queue = await newQueue();
        const other = await newQueue();
        await backend.subscribe({ queue, topics: [topic], filter: undefined }, 'none', T0);
        await backend.subscribe({ queue: other, topics: [topic], filter: undefined }, 'none', T0);
        const subscriptions = await backend.listSubscriptions();
        assert.deepEqual(
          subscriptions.find((x) => x.queue === queue),
          { queue, topics: [topic], filter: undefined },
        );
        assert.equal(await backend.unsubscribe(queue), true);
        assert.equal(await backend.unsubscribe(queue), false);
        await backend.deleteQueue(other);
        const [outcome] = await backend.publish(topic, [msg('after')], T0);
        assert.deepEqual(outcome?.deliveredTo, []);
        assert.deepEqual(await receiveIds(queue, T0), []);
        assert.ok(!(await backend.listSubscriptions()).some((x) => x.queue === other));
      });

      it('applies each subscribed queue’s duplicate window and settings', async () => {
        const topic = await newTopic('dedup');
        const dedup = await newQueue({ duplicateWindowMs: 60_000 });
        const noDedup = await newQueue({ duplicateWindowMs: 0, defaultTtlMs: 1000 });
        await backend.subscribe({ queue: dedup, topics: [topic], filter: undefined }, 'none', T0);
        await backend.subscribe({ queue: noDedup, topics: [topic], filter: undefined }, 'none', T0);
        await backend.publish(topic, [msg('same')], T0);
        const [again] = await backend.publish(topic, [msg('same')], T0 + 1);
        assert.deepEqual(again?.deliveredTo, [noDedup]);
        assert.equal((await backend.stats(dedup, T0 + 1)).length, 1);
        const peeked = await backend.peek(noDedup, { limit: 5 });
        assert.deepEqual(
          peeked.map((m) => m.expiresAt),
          [T0 + 1000, T0 + 1001],
        );
      });

      it('rebinding a queue replaces its patterns and filter', async () => {
        const topicA = await newTopic('a');
        const topicB = await newTopic('b');
        const queue = await newQueue();
        await backend.subscribe({ queue, topics: [topicA], filter: undefined }, 'none', T0);
        await backend.subscribe({ queue, topics: [topicB], filter: { subject: 'x' } }, 'none', T0);
        await backend.publish(topicA, [msg('a1', { subject: 'x' })], T0);
        await backend.publish(topicB, [msg('b1', { subject: 'x' }), msg('b2', { subject: 'y' })], T0);
        assert.deepEqual(await receiveIds(queue, T0), ['b1']);
      });
    });

    describe('watch', () => {
      it('wakes a watcher when a message is sent', async () => {
        const queue = await newQueue();
        let stop = () => {};
        const woken = new Promise<void>((resolve) => {
          stop = backend.watch(queue, resolve);
        });
        try {
          await backend.send(queue, [msg('ping')], T0);
          await withTimeout(woken, 5000, 'watch listener');
        } finally {
          stop();
        }
      });

      it('wakes a watcher when a published message arrives', async () => {
        const topic = unique('watch-topic');
        await backend.putTopic(topic, { retentionMs: 0 });
        const queue = await newQueue();
        await backend.subscribe({ queue, topics: [topic], filter: undefined }, 'none', T0);
        let stop = () => {};
        const woken = new Promise<void>((resolve) => {
          stop = backend.watch(queue, resolve);
        });
        try {
          await backend.publish(topic, [msg('ping')], T0);
          await withTimeout(woken, 5000, 'watch listener');
        } finally {
          stop();
        }
      });
    });

    describe('competing receivers', () => {
      it('gives each message to one receiver while it is locked', async () => {
        const queue = await newQueue();
        const total = 300;
        await backend.send(
          queue,
          Array.from({ length: total }, (_, i) => msg(`m${i}`)),
          T0,
        );
        const seen: string[] = [];
        await Promise.all(
          Array.from({ length: 6 }, async () => {
            for (let round = 0; round < 200; round++) {
              const { messages } = await backend.receive(queue, { max: 7, lockMs: LOCK, now: T0 });
              if (messages.length === 0) return;
              seen.push(...messages.map((m) => m.id));
              await backend.complete(
                queue,
                messages.map((m) => m.lockToken),
                T0,
              );
            }
          }),
        );
        assert.equal(seen.length, total);
        assert.equal(new Set(seen).size, total);
      });

      it('never hands two messages of one session out at once under concurrency', async () => {
        const queue = await newQueue({ sessions: true });
        const sessions = ['A', 'B', 'C', 'D'];
        const perSession = 25;
        const batch: OutgoingMessage[] = [];
        for (let i = 0; i < perSession; i++)
          for (const session of sessions) batch.push(msg(`${session}${i}`, { sessionId: session }));
        await backend.send(queue, batch, T0);
        const order = new Map<string, number[]>();
        const holding = new Set<string>();
        await Promise.all(
          Array.from({ length: 6 }, async () => {
            for (let round = 0; round < 400; round++) {
              const { messages } = await backend.receive(queue, { max: 3, lockMs: LOCK, now: T0 });
              if (messages.length === 0) {
                if ((await backend.stats(queue, T0)).length === 0) return;
                await new Promise((resolve) => setImmediate(resolve));
                continue;
              }
              for (const m of messages) {
                const session = m.sessionId as string;
                assert.ok(!holding.has(session), `session ${session} delivered twice at once`);
                holding.add(session);
                order.set(session, [...(order.get(session) ?? []), Number(m.id.slice(1))]);
              }
              await new Promise((resolve) => setImmediate(resolve));
              for (const m of messages) holding.delete(m.sessionId as string);
              await backend.complete(
                queue,
                messages.map((m) => m.lockToken),
                T0,
              );
            }
          }),
        );
        for (const session of sessions) {
          assert.deepEqual(
            order.get(session),
            Array.from({ length: perSession }, (_, i) => i),
          );
        }
      });
    });
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
