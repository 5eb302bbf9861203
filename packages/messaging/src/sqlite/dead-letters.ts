// The SQLite backend's dead-letter operations: listing, resending and purging a queue's dead letters.
import type { DeadLetter, DeadLetterQuery } from '../backend.js';
import { type QueueRows, waitingPlacement } from './queue-rows.js';
import { stored } from './rows.js';
import { type MessageRow, SQL } from './statements.js';

export function listDeadLetters(rows: QueueRows, queue: string, query: DeadLetterQuery): DeadLetter[] {
  const context = rows.load(queue);
  return rows.database
    .prepare(SQL.deadLetters)
    .all<MessageRow & { holds_session: number | null }>(context.id, query.afterSequence ?? 0, query.limit)
    .map((row) =>
      Object.assign(stored(row), {
        deadLetterReason: row.dead_reason as string,
        deadLetterDescription: row.dead_description ?? undefined,
        deadLetteredAt: row.dead_at as number,
        holdsSession: row.holds_session !== null,
      }),
    );
}

/**
 * A resent session message joins its session's waiting messages, and the session goes on if nothing holds it:
 * its first waiting message, by sequence, becomes the head (the resent one, when it held the session).
 */
export function resendDeadLetters(
  rows: QueueRows,
  queue: string,
  sequences: readonly number[],
  now: number,
): number {
  const db = rows.database;
  const context = rows.load(queue);
  let resent = 0;
  for (const sequence of [...sequences].sort((a, b) => a - b)) {
    const row = db
      .prepare(SQL.deadLetter)
      .get<{ priority: number; session: string | null }>(context.id, sequence);
    if (row === undefined) continue;
    const placement =
      row.session !== null ? waitingPlacement(now) : rows.placement(context, row.priority, now, now);
    db.prepare(SQL.resend).run(
      placement.state,
      placement.availableAt,
      placement.rank,
      placement.dueAt,
      sequence,
    );
    if (row.session !== null) rows.advanceSession(context, row.session, now);
    resent++;
  }
  if (resent > 0) context.signal = true;
  rows.finish(context);
  return resent;
}

/** Deletes dead letters; the sessions they held go on. */
export function purgeDeadLetters(
  rows: QueueRows,
  queue: string,
  sequences: readonly number[] | undefined,
  now: number,
): number {
  const db = rows.database;
  const context = rows.load(queue);
  let purged = 0;
  let highest = 0;
  const released = new Set<string>();
  if (sequences === undefined) {
    for (const { session } of db.prepare(SQL.heldSessions).all<{ session: string }>(context.id))
      released.add(session);
    highest = db.prepare(SQL.highestDead).get<{ highest: number | null }>(context.id)?.highest ?? 0;
    purged = db.prepare(SQL.deleteDead).run(context.id).changes;
  } else {
    const purge = db.prepare(SQL.purgeOne);
    for (const sequence of sequences) {
      const row = purge.get<{ session: string | null; holds_session: number | null }>(context.id, sequence);
      if (row === undefined) continue;
      purged++;
      highest = Math.max(highest, sequence);
      if (row.holds_session !== null) released.add(row.session as string);
    }
  }
  rows.deleted(context, highest);
  for (const session of released) rows.advanceSession(context, session, now);
  rows.finish(context);
  return purged;
}
