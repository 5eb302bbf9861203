// The SQLite backend's dead-letter operations: listing, resending and purging a queue's dead letters.
import type { DeadLetter, DeadLetterQuery } from '../backend.js';
import { type QueueRows, waitingPlacement } from './queue-rows.js';
import { stored } from './rows.js';
import { type MessageRow, SQL } from './statements.js';

export function listDeadLetters(rows: QueueRows, queue: string, query: DeadLetterQuery): DeadLetter[] {
  const context = rows.load(queue);
  return rows.database
    .prepare(SQL.deadLetters)
    .all<MessageRow>(context.id, query.afterSequence ?? 0, query.limit)
    .map((row) => ({
      ...stored(row),
      deadLetterReason: row.dead_reason as string,
      deadLetterDescription: row.dead_description ?? undefined,
      deadLetteredAt: row.dead_at as number,
    }));
}

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
      row.session !== null && rows.sessionBusy(context, row.session)
        ? waitingPlacement(now)
        : rows.placement(context, row.priority, now, now);
    db.prepare(SQL.resend).run(
      placement.state,
      placement.availableAt,
      placement.rank,
      placement.dueAt,
      sequence,
    );
    resent++;
  }
  if (resent > 0) context.signal = true;
  rows.finish(context);
  return resent;
}

export function purgeDeadLetters(
  rows: QueueRows,
  queue: string,
  sequences: readonly number[] | undefined,
): number {
  const db = rows.database;
  const context = rows.load(queue);
  if (sequences === undefined) {
    const highest = db.prepare(SQL.highestDead).get<{ highest: number | null }>(context.id)?.highest;
    const purged = db.prepare(SQL.deleteDead).run(context.id).changes;
    rows.deleted(context, highest ?? 0);
    return purged;
  }
  const purge = db.prepare(SQL.purgeOne);
  let purged = 0;
  let highest = 0;
  for (const sequence of sequences) {
    if (purge.run(context.id, sequence).changes === 0) continue;
    purged++;
    highest = Math.max(highest, sequence);
  }
  rows.deleted(context, highest);
  return purged;
}
