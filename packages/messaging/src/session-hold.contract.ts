import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
  type DeliveredMessage,
  type MessageBackend,
  type OutgoingMessage,
  type QueueSettings,
} from './backend.js';

/** What the port contract (message-backend.contract.ts) hands this part of it. */
export interface SessionHoldContext {
  /** The suite's backend, open once every test runs. */
  readonly backend: () => MessageBackend;
  /** A new queue of the suite's backend, with the contract's default settings and these. */
  readonly newQueue: (settings?: Partial<QueueSettings>) => Promise<string>;
  readonly defaults: QueueSettings;
  readonly open: () => Promise<MessageBackend>;
  readonly reopen: ((closed: MessageBackend) => Promise<MessageBackend>) | undefined;
}

const T0 = 1_750_000_000_000;
const LOCK = 30_000;

const s = (id: string, sessionId: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  id,
  body: new TextEncoder().encode(id),
  sessionId,
  ...extra,
});
const ids = (messages: readonly { id: string }[]) => messages.map((m) => m.id);
const token = (messages: readonly DeliveredMessage[], id: string) =>
  messages.find((m) => m.id === id)?.lockToken as string;

/** Receives and completes, one message per session at a time, until nothing comes: the ids, in delivery order. */
async function drain(backend: MessageBackend, queue: string, now: number): Promise<string[]> {
  const seen: string[] = [];
  for (let round = 0; round < 50; round++) {
    const { messages } = await backend.receive(queue, { max: 10, lockMs: LOCK, now: now + round });
    if (messages.length === 0) return seen;
    seen.push(...ids(messages));
    await backend.complete(
      queue,
      messages.map((m) => m.lockToken),
      now + round,
    );
  }
  throw new Error(`${queue} did not drain`);
}

/** A dead letter's id, reason and whether it holds its session. */
async function deadLetters(backend: MessageBackend, queue: string): Promise<[string, string, boolean][]> {
  return (await backend.listDeadLetters(queue, { limit: 100 })).map((d) => [
    d.id,
    d.deadLetterReason,
    d.holdsSession,
  ]);
}

/**
 * QueueSettings.onSessionDeadLetter 'hold' (the default): a session whose message was dead-lettered delivers
 * nothing more until that dead letter is resent (it then comes first) or purged; other sessions go on.
 */
export function sessionHoldContract(context: SessionHoldContext): void {
  describe('sessions held by a dead letter', () => {
    const sessionQueue = (settings: Partial<QueueSettings> = {}) =>
      context.newQueue({ sessions: true, ...settings });

    /** A queue whose session A has three messages, all locked by one receive (a session batch). */
    async function lockedBatch(): Promise<{ queue: string; batch: DeliveredMessage[] }> {
      const backend = context.backend();
      const queue = await sessionQueue();
      await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('a3', 'A')], T0);
      const request = { max: 1, lockMs: LOCK, now: T0, sessionBatch: 3 };
      const batch = (await backend.receive(queue, request)).messages;
      assert.deepEqual(ids(batch), ['a1', 'a2', 'a3']);
      return { queue, batch };
    }

    it('holds a session whose head used its last delivery, while the other sessions go on', async () => {
      const backend = context.backend();
      const queue = await sessionQueue({ maxDeliveryCount: 1 });
      await backend.send(queue, [s('a1', 'A'), s('b1', 'B'), s('a2', 'A'), s('b2', 'B'), s('a3', 'A')], T0);
      const [a1] = (await backend.receive(queue, { max: 1, lockMs: LOCK, now: T0 })).messages;
      assert.equal(a1?.id, 'a1');
      await backend.abandon(queue, a1.lockToken, 0, T0 + 1);
      assert.deepEqual(await drain(backend, queue, T0 + 2), ['b1', 'b2']);
      assert.deepEqual(await deadLetters(backend, queue), [['a1', DEAD_LETTER_MAX_DELIVERIES, true]]);
      const stats = await backend.stats(queue, T0 + 100);
      assert.deepEqual([stats.available, stats.waiting, stats.deadLettered], [0, 2, 1]);
    });

    it('holds a session whose head a receiver dead-letters, and one whose last lock expired', async () => {
      const backend = context.backend();
      const queue = await sessionQueue({ maxDeliveryCount: 1 });
      await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('b1', 'B'), s('b2', 'B')], T0);
      const { messages } = await backend.receive(queue, { max: 2, lockMs: 1000, now: T0 });
      assert.deepEqual(ids(messages), ['a1', 'b1']);
      assert.equal(
        await backend.deadLetter(queue, token(messages, 'a1'), 'invalid', 'no order', T0 + 1),
        'ok',
      );
      // b1's lock ends after its only delivery: the backend dead-letters it.
      assert.deepEqual(await drain(backend, queue, T0 + 1000), []);
      assert.deepEqual(await deadLetters(backend, queue), [
        ['a1', 'invalid', true],
        ['b1', DEAD_LETTER_MAX_DELIVERIES, true],
      ]);
      assert.equal((await backend.stats(queue, T0 + 1000)).waiting, 2);
    });

    it('resending the dead letter releases its session: it comes first, then the messages that waited', async () => {
      const backend = context.backend();
      const queue = await sessionQueue();
      await backend.send(queue, [s('a1', 'A'), s('a2', 'A'), s('b1', 'B')], T0);
      const [a1] = (await backend.receive(queue, { max: 1, lockMs: LOCK, now: T0 })).messages;
      await backend.deadLetter(queue, (a1 as DeliveredMessage).lockToken, 'invalid', undefined, T0 + 1);
      await backend.send(queue, [s('a3', 'A')], T0 + 2);
      assert.deepEqual(await drain(backend, queue, T0 + 3), ['b1'], 'a2 and a3 wait, a3 sent while held');
      assert.equal(await backend.resendDeadLetters(queue, [(a1 as DeliveredMessage).sequence], T0 + 10), 1);
      assert.deepEqual(await deadLetters(backend, queue), []);
      const [again] = (await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 + 11 })).messages;
      assert.deepEqual([again?.id, again?.deliveryCount], ['a1', 1]);
      await backend.complete(queue, [(again as DeliveredMessage).lockToken], T0 + 12);
      assert.deepEqual(await drain(backend, queue, T0 + 13), ['a2', 'a3']);
    });

    it('purging the dead letter releases its session: the next message goes on', async () => {
      const backend = context.backend();
      const queue = await sessionQueue();
      await backend.send(queue, [s('a1', 'A'), s('b1', 'B'), s('a2', 'A'), s('b2', 'B'), s('a3', 'A')], T0);
      const { messages } = await backend.receive(queue, { max: 2, lockMs: LOCK, now: T0 });
      for (const m of messages) await backend.deadLetter(queue, m.lockToken, 'invalid', undefined, T0 + 1);
      assert.deepEqual(await drain(backend, queue, T0 + 2), []);
      const a1 = messages.find((m) => m.id === 'a1') as DeliveredMessage;
      assert.equal(await backend.purgeDeadLetters(queue, [a1.sequence], T0 + 10), 1);
      assert.deepEqual(await drain(backend, queue, T0 + 11), ['a2', 'a3']);
      assert.equal(await backend.purgeDeadLetters(queue, undefined, T0 + 20), 1);
      assert.deepEqual(await drain(backend, queue, T0 + 21), ['b2']);
    });

    it('never holds a session for an expired message', async () => {
      const backend = context.backend();
      const queue = await sessionQueue();
      await backend.send(
        queue,
        [s('a1', 'A', { expiresAt: T0 + 1000 }), s('a2', 'A'), s('b1', 'B'), s('b2', 'B')],
        T0,
      );
      const { messages } = await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 + 1000 });
      assert.deepEqual(ids(messages).sort(), ['a2', 'b1'], 'a1 expired on the way, and a2 took its place');
      // A receiver that finds its message expired says so with the same reason: the session goes on too.
      await backend.deadLetter(queue, token(messages, 'b1'), DEAD_LETTER_EXPIRED, undefined, T0 + 1001);
      assert.deepEqual(
        ids((await backend.receive(queue, { max: 10, lockMs: LOCK, now: T0 + 1002 })).messages),
        ['b2'],
      );
      assert.deepEqual(await deadLetters(backend, queue), [
        ['a1', DEAD_LETTER_EXPIRED, false],
        ['b1', DEAD_LETTER_EXPIRED, false],
      ]);
    });

    it('sends the messages locked behind a dead letter that holds its session back to waiting', async (t) => {
      const backend = context.backend();
      if (backend.sessionBatches !== true) return t.skip('no session batches');
      const { queue, batch } = await lockedBatch();
      await backend.deadLetter(queue, token(batch, 'a1'), 'invalid', undefined, T0 + 1);
      assert.deepEqual(await backend.complete(queue, [token(batch, 'a2')], T0 + 2), ['lost']);
      assert.deepEqual(await drain(backend, queue, T0 + 3), []);
      await backend.resendDeadLetters(queue, [(batch[0] as DeliveredMessage).sequence], T0 + 10);
      assert.deepEqual(await drain(backend, queue, T0 + 11), ['a1', 'a2', 'a3']);
    });

    it('holds a session for a dead letter after its head, once the head completes', async (t) => {
      const backend = context.backend();
      if (backend.sessionBatches !== true) return t.skip('no session batches');
      const { queue, batch } = await lockedBatch();
      await backend.deadLetter(queue, token(batch, 'a2'), 'invalid', undefined, T0 + 1);
      assert.deepEqual(await backend.complete(queue, [token(batch, 'a3'), token(batch, 'a1')], T0 + 2), [
        'lost',
        'ok',
      ]);
      assert.deepEqual(await drain(backend, queue, T0 + 3), []);
      assert.deepEqual(await deadLetters(backend, queue), [['a2', 'invalid', true]]);
      await backend.resendDeadLetters(queue, [(batch[1] as DeliveredMessage).sequence], T0 + 10);
      assert.deepEqual(await drain(backend, queue, T0 + 11), ['a2', 'a3']);
    });

    // Only for backends that keep their data once closed (not memory).
    const { reopen } = context;
    if (reopen !== undefined)
      it('keeps a session held across a restart', async () => {
        const first = await context.open();
        const queue = `held-${process.pid}-${Date.now().toString(36)}`;
        await first.putQueue(queue, { ...context.defaults, sessions: true });
        await first.send(queue, [s('a1', 'A'), s('a2', 'A'), s('b1', 'B')], T0);
        const [a1] = (await first.receive(queue, { max: 1, lockMs: LOCK, now: T0 })).messages;
        await first.deadLetter(queue, (a1 as DeliveredMessage).lockToken, 'invalid', undefined, T0 + 1);
        await first.close();
        const restarted = await reopen(first);
        try {
          assert.deepEqual(await drain(restarted, queue, T0 + 2), ['b1']);
          assert.deepEqual(await deadLetters(restarted, queue), [['a1', 'invalid', true]]);
          await restarted.resendDeadLetters(queue, [(a1 as DeliveredMessage).sequence], T0 + 10);
          assert.deepEqual(await drain(restarted, queue, T0 + 11), ['a1', 'a2']);
        } finally {
          await restarted.deleteQueue(queue);
          await restarted.close();
        }
      });
  });
}
