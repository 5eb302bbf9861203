import type { EventStore, ParkedEvent, ParkedSelection } from '@stratus/eventsourcing';

export type Write = (text: string) => void;

function describeParked(parked: ParkedEvent): string {
  const when = new Date(parked.parkedAt).toISOString();
  const why =
    parked.reason === 'blocked'
      ? 'blocked behind an earlier parked event'
      : `${parked.attempts} attempts: ${parked.error}`;
  const retry = parked.retryRequested ? '  (retry asked)' : '';
  return `#${parked.position}  ${parked.eventType}  ${parked.streamName}  ${when}  ${parked.reason}, ${why}${retry}`;
}

/** Every subscription with parked events and how many, or (given one) its parked events, one per line. */
export async function listParked(
  store: EventStore,
  write: Write,
  subscription?: string,
  limit = 1000,
): Promise<number> {
  if (subscription === undefined) {
    const counts = Object.entries(await store.parkedCounts()).sort(([a], [b]) => a.localeCompare(b));
    if (counts.length === 0) write('No parked events.\n');
    const width = Math.max(12, ...counts.map(([name]) => name.length));
    if (counts.length > 0) write(`${'subscription'.padEnd(width)}  parked\n`);
    for (const [name, count] of counts) write(`${name.padEnd(width)}  ${String(count).padStart(6)}\n`);
    return counts.reduce((sum, [, count]) => sum + count, 0);
  }
  let shown = 0;
  let after = 0;
  while (shown < limit) {
    const page = await store.parked(subscription, { after, limit: Math.min(500, limit - shown) });
    for (const parked of page) write(`${describeParked(parked)}\n`);
    shown += page.length;
    if (page.length === 0) break;
    after = page.at(-1)?.position ?? after;
  }
  if (shown === 0) write(`No parked events for "${subscription}".\n`);
  return shown;
}

/** Positions named on the command line ("12,40"), or 'all'. */
export function parkedSelection(which: string): ParkedSelection {
  if (which === 'all') return 'all';
  const positions = which.split(',').map((part) => Number(part.trim()));
  if (positions.some((n) => !Number.isSafeInteger(n) || n <= 0))
    throw new Error(`expected "all" or comma-separated positions, got "${which}"`);
  return positions;
}
