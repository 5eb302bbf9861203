#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { EventStore, openEventStoreBackend } from '@stratus/eventsourcing';
import { Messaging, openMessageBackend } from '@stratus/messaging';
import { runDemo } from './demo/demo.js';
import { openEventLog } from './event-log.js';
import { checkGatewayFile, runGateway } from './gateway.js';
import { listParked, parkedSelection } from './parked.js';
import { listDeadLetters, selectDeadLetters, showQueues } from './queues.js';
import { UsageError } from './usage-error.js';

export { UsageError };

const usage = `Usage: stratus <command> [options]

Commands:
  demo    A flaky HTTP upstream on loopback and a client calling it through a Stratus resilience
          pipeline, shown live: breaker state, retries, throttling and latency.
          --duration <s>     how long to run (default 30)
          --rps <n>          offered load in calls per second (default 150)
          --concurrency <n>  calls in flight at most (default 32)
          --limit-rps <n>    client-side rate limit, 0 for none (default 120)
          --plain            one line per second instead of a live dashboard
          --log <file>       also write every policy event as a pino JSON line to <file>
  queues [--watch]
          Every queue and subscription with its length, in flight, scheduled, dead letters and the
          age of its oldest message; --watch redraws it every second until Ctrl-C.
  dead-letters <queue> [--resend all|<seq,...>] [--purge all|<seq,...>] [--limit <n>]
          Lists the dead letters of a queue (sequence, id, when, deliveries, reason, the session
          it holds), or puts them back in the queue, or deletes them (a session they held goes on).
  parked [<subscription>] [--retry all|<position,...>] [--skip all|<position,...>] [--limit <n>]
          The events subscriptions and projections set aside after their handler kept failing: how
          many per subscription, or one subscription's (position, type, stream, when, why); or asks
          the running subscription to handle them again, in order, or drops them.
  gateway <config.json> [--port <n>] [--host <address>] [--quiet] [--limits-store <url>]
          An HTTP gateway serving the routes and upstreams of a JSON config file (schema in
          @stratus/edge), applied again whenever the file changes or on SIGHUP; a file that does not
          validate is refused and the last good config stays. Logs config changes and, unless
          --quiet, one access-log line per request (pino JSON). Default 127.0.0.1:8080.
          --limits-store redis://... or postgres://... (default $STRATUS_GATEWAY_LIMITS_URL) shares
          the rate limits' counters with every gateway on it; without it they live in the process.
          --admin-port <n> [--admin-host <address>] opens the admin listener: /health/live,
          /health/ready, /metrics, and with $STRATUS_GATEWAY_ADMIN_TOKEN (32+ characters, required
          off loopback) /admin/upstreams, /admin/config and POST /admin/reload.
  gateway check <config.json> [--against <running.json>]
          Validates a config file: exit 0 if good, 1 listing every problem; with --against, also
          prints the upstreams and routes it would add, remove or change.
  help    Show this text.

The queue commands take --backend <url> (default $STRATUS_MESSAGING_URL, else sqlite:./.data/messages.db):
sqlite:<path>, postgres://..., redis://... or memory:.
The parked command takes --store <url> (default $STRATUS_EVENTSTORE_URL, else sqlite:./.data/events.db):
sqlite:<path> or postgres://...?schema=<schema>.
`;

const DEFAULT_BACKEND = 'sqlite:./.data/messages.db';
const DEFAULT_EVENT_STORE = 'sqlite:./.data/events.db';

function positiveNumber(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new UsageError(
      `--${name} expects a ${allowZero ? 'non-negative' : 'positive'} number, got "${raw}"`,
    );
  }
  return value;
}

export async function main(argv: readonly string[]): Promise<number> {
  const [command = 'help', ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage);
    return 0;
  }
  if (command === 'queues' || command === 'dead-letters') return queueCommand(command, rest);
  if (command === 'parked') return parkedCommand(rest);
  if (command === 'gateway') {
    if (rest[0] === 'check') return checkGatewayFile(rest.slice(1), (text) => process.stdout.write(text));
    await (await runGateway(rest, process.stdout)).stopped;
    return 0;
  }
  if (command !== 'demo') throw new UsageError(`Unknown command "${command}"`);
  const { values } = parseArgs({
    args: [...rest],
    options: {
      duration: { type: 'string' },
      rps: { type: 'string' },
      concurrency: { type: 'string' },
      'limit-rps': { type: 'string' },
      plain: { type: 'boolean', default: false },
      log: { type: 'string' },
    },
    strict: true,
  });
  const live = !values.plain && process.stdout.isTTY === true;
  const eventLog = values.log === undefined ? undefined : await openEventLog(values.log);
  const summary = await runDemo({
    durationS: positiveNumber('duration', values.duration, 30),
    rps: positiveNumber('rps', values.rps, 150),
    concurrency: Math.floor(positiveNumber('concurrency', values.concurrency, 32)),
    limitRps: positiveNumber('limit-rps', values['limit-rps'], 120, true),
    live,
    colour: live && !process.env.NO_COLOR,
    write: (text) => process.stdout.write(text),
  }).finally(() => eventLog?.close());
  const t = summary.totals;
  process.stdout.write(
    `\nDone: ok ${t.ok}, failed ${t.failed}, timeouts ${t.timeout}, fast-failed by the open breaker ${t['broken-circuit']}, ` +
      `throttled ${t.throttled}, retries ${summary.retries}, upstream requests ${summary.upstreamRequests}\n` +
      `Breaker transitions: ${summary.transitions.join(', ') || 'none'}\n`,
  );
  return 0;
}

async function queueCommand(command: 'queues' | 'dead-letters', args: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      backend: { type: 'string' },
      watch: { type: 'boolean', default: false },
      resend: { type: 'string' },
      purge: { type: 'string' },
      limit: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const url = values.backend ?? process.env.STRATUS_MESSAGING_URL ?? DEFAULT_BACKEND;
  const messaging = new Messaging({ backend: openMessageBackend(url) });
  const write = (text: string) => process.stdout.write(text);
  try {
    if (command === 'queues') {
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      await showQueues(messaging, write, {
        watch: values.watch,
        live: process.stdout.isTTY === true,
        signal: stop.signal,
      });
      return 0;
    }
    const queue = positionals[0];
    if (queue === undefined) throw new UsageError('dead-letters needs a queue name');
    if (values.resend !== undefined) {
      const resent = await messaging
        .queue(queue)
        .resendDeadLetters(await selectDeadLetters(messaging, queue, values.resend));
      write(`Resent ${resent} dead letter(s) to "${queue}".\n`);
    } else if (values.purge !== undefined) {
      const purged =
        values.purge === 'all'
          ? await messaging.queue(queue).purgeDeadLetters()
          : await messaging
              .queue(queue)
              .purgeDeadLetters(await selectDeadLetters(messaging, queue, values.purge));
      write(`Purged ${purged} dead letter(s) of "${queue}".\n`);
    } else {
      await listDeadLetters(messaging, queue, write, Math.floor(positiveNumber('limit', values.limit, 1000)));
    }
    return 0;
  } finally {
    await messaging.close();
  }
}

async function parkedCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      store: { type: 'string' },
      retry: { type: 'string' },
      skip: { type: 'string' },
      limit: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [subscription] = positionals;
  if ((values.retry !== undefined || values.skip !== undefined) && subscription === undefined)
    throw new UsageError('--retry and --skip need a subscription name');
  const url = values.store ?? process.env.STRATUS_EVENTSTORE_URL ?? DEFAULT_EVENT_STORE;
  const store = new EventStore({ backend: openEventStoreBackend(url) });
  const write = (text: string) => process.stdout.write(text);
  try {
    if (subscription !== undefined && values.retry !== undefined) {
      const marked = await store.retryParked(subscription, parkedSelection(values.retry));
      write(
        `Asked "${subscription}" to retry ${marked} parked event(s); it does within its poll interval.\n`,
      );
    } else if (subscription !== undefined && values.skip !== undefined) {
      const skipped = await store.skipParked(subscription, parkedSelection(values.skip));
      write(`Skipped ${skipped} parked event(s) of "${subscription}".\n`);
    } else {
      await listParked(store, write, subscription, Math.floor(positiveNumber('limit', values.limit, 1000)));
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** Runs `main` as the process: exits with its code, or 2 with the usage text on a usage error. */
export function runCommand(argv: readonly string[]): void {
  main(argv).then(
    (code) => process.exit(code),
    (error: unknown) => {
      if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
        process.stderr.write(`${(error as Error).message}\n\n${usage}`);
        process.exit(2);
      }
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}

if (import.meta.url === `file://${process.argv[1]}`) runCommand(process.argv.slice(2));
