// Receiving and settling SQLite messages inside a transaction: locking, renewing, completing, abandoning, killing.
import {
  DEAD_LETTER_EXPIRED,
  type DeliveredMessage,
  type ReceiveRequest,
  type ReceiveResult,
  type SettleOutcome,
} from '../backend.js';
import type { QueueRows } from './queue-rows.js';
import { stored, tokenSequence } from './rows.js';
import { type MessageRow, SQL } from './statements.js';

export function receiveNow(rows: QueueRows, queue: string, request: ReceiveRequest): ReceiveResult {
  const db = rows.database;
  const { max, lockMs, now } = request;
  const context = rows.load(queue);
  rows.releaseDue(context, now);
  const messages: DeliveredMessage[] = [];
  const lockedUntil = now + lockMs;
  const pick = db.prepare(SQL.pick);
  const lock = db.prepare(SQL.lock);
  // Expired messages met on the way are dead-lettered and picking goes on (a dead session head may also
  // have let the next message of its session through).
  const lockRow = (row: MessageRow) => {
    const lockToken = rows.lockToken(row.sequence);
    lock.run(lockToken, lockedUntil, row.sequence);
    messages.push(
      Object.assign(stored(row), {
        state: 'locked' as const,
        deliveryCount: row.delivery_count + 1,
        lockToken,
        lockedUntil,
      }),
    );
  };
  const batch = request.sessionBatch ?? 1;
  let heads = 0;
  for (let expired = true; expired && heads < max; ) {
    expired = false;
    for (const row of pick.all<MessageRow>(context.id, max - heads)) {
      if (row.expires_at !== null && row.expires_at <= now) {
        rows.kill(context, row.sequence, row.session, DEAD_LETTER_EXPIRED, undefined, now);
        expired = true;
        continue;
      }
      lockRow(row);
      heads++;
      if (row.session === null || batch <= 1) continue;
      const followers = db.prepare(SQL.followers).all<MessageRow>(context.id, row.session, batch - 1);
      for (const follower of followers) {
        const expires = follower.expires_at;
        if (follower.available_at > now || (expires !== null && expires <= now)) break;
        lockRow(follower);
      }
    }
  }
  const nextDueAt = messages.length > 0 ? undefined : rows.nextDue(context);
  rows.finish(context);
  return { messages, nextDueAt };
}

export function renewNow(
  rows: QueueRows,
  queue: string,
  lockTokens: readonly string[],
  lockMs: number,
  now: number,
): (number | undefined)[] {
  const context = rows.load(queue);
  const renew = rows.database.prepare(SQL.renew);
  const lockedUntil = now + lockMs;
  return lockTokens.map((token) => {
    const sequence = tokenSequence(token);
    if (sequence === undefined) return undefined;
    return renew.run(lockedUntil, sequence, context.id, token).changes === 1 ? lockedUntil : undefined;
  });
}

export function completeNow(
  rows: QueueRows,
  queue: string,
  lockTokens: readonly string[],
  now: number,
): SettleOutcome[] {
  const context = rows.load(queue);
  const complete = rows.database.prepare(SQL.complete);
  let highest = 0;
  const outcomes = lockTokens.map((token): SettleOutcome => {
    const sequence = tokenSequence(token);
    const row =
      sequence === undefined
        ? undefined
        : complete.get<{ session: string | null }>(sequence, context.id, token);
    if (sequence === undefined || row === undefined) return 'lost';
    highest = Math.max(highest, sequence);
    if (row.session !== null) rows.advanceSession(context, row.session, now);
    return 'ok';
  });
  rows.deleted(context, highest);
  rows.finish(context);
  return outcomes;
}

export function abandonNow(
  rows: QueueRows,
  queue: string,
  lockToken: string,
  delayMs: number,
  now: number,
): SettleOutcome {
  const context = rows.load(queue);
  const sequence = tokenSequence(lockToken);
  const row =
    sequence === undefined
      ? undefined
      : rows.database
          .prepare(SQL.locked)
          .get<{ delivery_count: number; priority: number; session: string | null }>(
            sequence,
            context.id,
            lockToken,
          );
  if (sequence === undefined || row === undefined) return 'lost';
  rows.unlock(context, { ...row, sequence }, now + delayMs, now);
  rows.finish(context);
  return 'ok';
}

export function deadLetterNow(
  rows: QueueRows,
  queue: string,
  lockToken: string,
  reason: string,
  description: string | undefined,
  now: number,
): SettleOutcome {
  const context = rows.load(queue);
  const sequence = tokenSequence(lockToken);
  const row =
    sequence === undefined
      ? undefined
      : rows.database.prepare(SQL.locked).get<{ session: string | null }>(sequence, context.id, lockToken);
  if (sequence === undefined || row === undefined) return 'lost';
  rows.kill(context, sequence, row.session, reason, description, now);
  rows.finish(context);
  return 'ok';
}
