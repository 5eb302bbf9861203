import type { DeadLetter, Messaging, QueueMetricsSample } from '@stratus/messaging';
import { QueueMetricsCollector } from '@stratus/messaging';

export type Write = (text: string) => void;

const COLUMNS = [
  'queue',
  'kind',
  'length',
  'available',
  'scheduled',
  'in flight',
  'waiting',
  'dead',
  'oldest',
] as const;

function age(ms: number): string {
  if (ms === 0) return '-';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** Queue statistics as an aligned text table. */
export function formatQueueTable(samples: readonly QueueMetricsSample[]): string {
  const rows = samples.map((sample) => {
    const s = sample.stats;
    return [
      sample.queue,
      sample.topics === undefined ? 'queue' : `sub ${sample.topics.join(',')}`,
      String(s.length),
      String(s.available),
      String(s.scheduled),
      String(s.locked),
      String(s.waiting),
      String(s.deadLettered),
      age(s.oldestAgeMs),
    ];
  });
  const widths = COLUMNS.map((column, i) =>
    Math.max(column.length, ...rows.map((row) => (row[i] as string).length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i < 2 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number)))
      .join('  ');
  if (rows.length === 0) return 'No queues.\n';
  return `${[line(COLUMNS), ...rows.map(line)].join('\n')}\n`;
}

/** Prints the queue table once, or (`watch`) redraws it every `intervalMs` until `signal` aborts. */
export async function showQueues(
  messaging: Messaging,
  write: Write,
  options: { watch?: boolean; intervalMs?: number; live?: boolean; signal?: AbortSignal } = {},
): Promise<void> {
  const collector = new QueueMetricsCollector(messaging);
  if (!options.watch) {
    write(formatQueueTable(await collector.refresh()));
    return;
  }
  const intervalMs = options.intervalMs ?? 1000;
  while (!options.signal?.aborted) {
    const table = formatQueueTable(await collector.refresh());
    // A terminal gets the table redrawn in place; a pipe gets one timestamped table per refresh.
    write(
      options.live ? `\x1b[H\x1b[2J${table}` : `${new Date(messaging.clock.now()).toISOString()}\n${table}`,
    );
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, intervalMs);
      options.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}

function describeDeadLetter(dead: DeadLetter): string {
  const when = new Date(dead.deadLetteredAt).toISOString();
  const why = dead.deadLetterDescription
    ? `${dead.deadLetterReason}: ${dead.deadLetterDescription}`
    : dead.deadLetterReason;
  // The session's later messages wait for this one: resending or purging it lets them go on.
  const holds = dead.holdsSession ? `  [holds session ${dead.sessionId}]` : '';
  return `#${dead.sequence}  ${dead.id}  ${when}  deliveries ${dead.deliveryCount}  ${why}${holds}`;
}

/** Every dead letter of `queue` (paged through), one per line. */
export async function listDeadLetters(
  messaging: Messaging,
  queue: string,
  write: Write,
  limit = 1000,
): Promise<number> {
  const client = messaging.queue(queue);
  let after: number | undefined;
  let shown = 0;
  while (shown < limit) {
    const page = await client.listDeadLetters({ limit: Math.min(100, limit - shown), afterSequence: after });
    for (const dead of page) write(`${describeDeadLetter(dead)}\n`);
    shown += page.length;
    if (page.length === 0) break;
    after = page.at(-1)?.sequence;
  }
  if (shown === 0) write(`No dead letters in "${queue}".\n`);
  return shown;
}

/** Sequences named on the command line, or every dead letter of the queue for 'all'. */
export async function selectDeadLetters(
  messaging: Messaging,
  queue: string,
  which: string,
): Promise<number[]> {
  if (which !== 'all') {
    const sequences = which.split(',').map((part) => Number(part.trim()));
    if (sequences.some((n) => !Number.isSafeInteger(n) || n <= 0)) {
      throw new Error(`expected "all" or comma-separated sequence numbers, got "${which}"`);
    }
    return sequences;
  }
  const client = messaging.queue(queue);
  const sequences: number[] = [];
  for (;;) {
    const page = await client.listDeadLetters({ limit: 500, afterSequence: sequences.at(-1) });
    if (page.length === 0) return sequences;
    sequences.push(...page.map((dead) => dead.sequence));
  }
}
