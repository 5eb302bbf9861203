import { exponentialBackoff } from '@stratus/core';
import {
  BrokenCircuitError,
  type CircuitState,
  circuitBreaker,
  type Policy,
  pipeline,
  RateLimitedError,
  rateLimit,
  retry,
  TimeoutError,
  timeout,
  tokenBucket,
} from '@stratus/resilience';
import { type Answer, type Behaviour, startFaultyUpstream, weighted } from './faulty-upstream.js';
import { type Frame, renderFrame, renderLine } from './live-view.js';
import { UpstreamStatusError } from './upstream-status-error.js';
import { type CallOutcome, WindowStats } from './window-stats.js';

export interface DemoOptions {
  durationS: number;
  /** Offered load, calls per second. */
  rps: number;
  /** Calls in flight at most (a client-side cap, like a connection pool). */
  concurrency: number;
  /** Client-side rate limit in calls per second (token bucket); 0 turns it off. */
  limitRps: number;
  /** Redraw a dashboard in place (a terminal) or print one line per second (pipes, CI). */
  live: boolean;
  colour: boolean;
  write: (text: string) => void;
}

export interface DemoSummary {
  readonly totals: Readonly<Record<CallOutcome, number>>;
  readonly retries: number;
  readonly upstreamRequests: number;
  /** Breaker transitions seen, in order, e.g. "closed→open". */
  readonly transitions: readonly string[];
}

interface Phase {
  readonly name: string;
  /** Fraction of the run at which the phase starts. */
  readonly from: number;
  readonly behaviour: Behaviour;
}

const ok = (delayMs: number): Answer => ({ status: 200, delayMs });
const jitteredOk =
  (minMs: number, spreadMs: number): Behaviour =>
  () =>
    ok(minMs + Math.random() * spreadMs);

/** The upstream's story: healthy, slow, down, back, overloaded (429 + Retry-After), healthy. */
const phases: readonly Phase[] = [
  {
    name: 'healthy (5% errors)',
    from: 0,
    behaviour: weighted([
      [95, ok(8)],
      [5, { status: 500 }],
    ]),
  },
  {
    name: 'slow (40% past the timeout)',
    from: 0.2,
    behaviour: weighted([
      [60, ok(15)],
      [40, ok(900)],
    ]),
  },
  { name: 'outage (503)', from: 0.35, behaviour: () => ({ status: 503 }) },
  { name: 'recovered', from: 0.55, behaviour: jitteredOk(3, 10) },
  {
    name: 'overloaded (429, Retry-After: 1)',
    from: 0.75,
    behaviour: weighted([
      [50, ok(5)],
      [50, { status: 429, retryAfterS: 1 }],
    ]),
  },
  { name: 'healthy', from: 0.87, behaviour: jitteredOk(3, 10) },
];

function classify(error: unknown): CallOutcome {
  if (error instanceof BrokenCircuitError) return 'broken-circuit';
  if (error instanceof TimeoutError) return 'timeout';
  if (error instanceof RateLimitedError) return 'throttled';
  return 'failed';
}

/**
 * A flaky HTTP upstream on loopback and a client calling it through a Stratus pipeline
 * (retry → circuit breaker → timeout), shown live. Runs for `durationS` and stops by itself.
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const upstream = await startFaultyUpstream(phases[0]!.behaviour);
  const breaker = circuitBreaker({
    name: 'upstream',
    trip: { kind: 'failure-ratio', ratio: 0.5, windowMs: 2_000, minThroughput: 20 },
    openMs: exponentialBackoff({ initialMs: 1_000, maxMs: 4_000 }),
    halfOpen: { maxConcurrent: 2, successesToClose: 3 },
  });
  const retries = retry({
    name: 'upstream',
    maxAttempts: 3,
    backoff: exponentialBackoff({ initialMs: 50, maxMs: 400, jitter: 'equal' }),
    maxRetryAfterMs: 1_500,
  });
  const policies: Policy[] = [retries, breaker, timeout({ timeoutMs: 250, strategy: 'cooperative' })];
  // Client-side throttling in front of everything: a token bucket (bursts of a quarter second) whose soft
  // limit at 80 % is where an application would switch off non-essential calls.
  let softLimited = false;
  if (options.limitRps > 0) {
    const limiter = tokenBucket({
      name: 'client',
      capacity: Math.max(1, Math.round(options.limitRps / 4)),
      refillRate: options.limitRps,
      softLimit: {
        threshold: 0.8,
        clearBelow: 0.5,
        onChange: (event) => (softLimited = event.type === 'soft-limit'),
      },
    });
    policies.unshift(rateLimit({ name: 'client', limiter }));
  }
  const client = pipeline(...policies);

  const started = performance.now();
  const stats = new WindowStats(started);
  const log: string[] = [];
  const transitions: string[] = [];
  const note = (line: string) => {
    log.push(`${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s ${line}`);
    if (log.length > 6) log.shift();
  };
  breaker.events.on((event) => {
    if (event.type !== 'state-change') return;
    transitions.push(`${event.from}→${event.to}`);
    note(`breaker ${event.from} → ${event.to} (${event.reason})`);
  });
  retries.events.on((event) => {
    if (event.type === 'retry') stats.recordRetry();
  });

  const call = async ({ signal }: { signal: AbortSignal }) => {
    const response = await fetch(upstream.url, { signal });
    await response.arrayBuffer();
    if (!response.ok) throw new UpstreamStatusError(response);
    return response.status;
  };

  const inFlight = new Set<Promise<void>>();
  const issue = () => {
    const t0 = performance.now();
    const settled = client.execute(call).then(
      () => stats.record('ok', performance.now() - t0),
      (error: unknown) => stats.record(classify(error), performance.now() - t0),
    );
    inFlight.add(settled);
    void settled.finally(() => inFlight.delete(settled));
  };

  // Offered load: a steady tick issues rps/100 calls every 10 ms (fractions carried over), capped by concurrency.
  let phaseIndex = 0;
  let credit = 0;
  let linesDrawn = 0;
  const durationMs = options.durationS * 1000;
  const draw = () => {
    const now = performance.now();
    const frame: Frame = {
      elapsedS: Math.min(options.durationS, (now - started) / 1000),
      durationS: options.durationS,
      phase: phases[phaseIndex]!.name,
      breaker: breaker.state as CircuitState,
      softLimited,
      report: stats.roll(now),
      totals: stats.totals,
      totalRetries: stats.totalRetries,
      upstreamRequests: upstream.requests,
      log,
    };
    if (!options.live) {
      options.write(`${renderLine(frame)}\n`);
      return;
    }
    const lines = renderFrame(frame, options.colour);
    const rewind = linesDrawn > 0 ? `\x1b[${linesDrawn}A\x1b[0J` : '';
    options.write(`${rewind}${lines.join('\n')}\n`);
    linesDrawn = lines.length;
  };

  await new Promise<void>((resolve) => {
    const ticker = setInterval(() => {
      const elapsed = performance.now() - started;
      if (elapsed >= durationMs) {
        clearInterval(ticker);
        clearInterval(painter);
        resolve();
        return;
      }
      const next = phases[phaseIndex + 1];
      if (next && elapsed >= next.from * durationMs) {
        phaseIndex++;
        upstream.setBehaviour(next.behaviour);
        note(`upstream is now ${next.name}`);
      }
      credit += options.rps / 100;
      while (credit >= 1 && inFlight.size < options.concurrency) {
        credit--;
        issue();
      }
      credit = Math.min(credit, options.rps);
    }, 10);
    const painter = setInterval(draw, 1_000);
  });
  // The last calls settle within the pipeline's bounds (3 attempts of 250 ms plus capped waits).
  await Promise.all(inFlight);
  draw();
  await upstream.close();
  return {
    totals: { ...stats.totals },
    retries: stats.totalRetries,
    upstreamRequests: upstream.requests,
    transitions,
  };
}
