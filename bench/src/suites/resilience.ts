/**
 * Suite "resilience" (anchors §13 R1, R2, L1): the overhead of each policy wrapped around `async () => 42`,
 * Stratus side by side with cockatiel, opossum, p-limit and rate-limiter-flexible in one process.
 */
import {
  bulkhead,
  circuitBreaker,
  fallback,
  fixedWindow,
  pipeline,
  rateLimit,
  redisStore,
  retry,
  timeout,
} from '@stratus/resilience';
import {
  ConsecutiveBreaker,
  bulkhead as cockatielBulkhead,
  circuitBreaker as cockatielCircuitBreaker,
  fallback as cockatielFallback,
  retry as cockatielRetry,
  timeout as cockatielTimeout,
  handleAll,
  TimeoutStrategy,
  wrap,
} from 'cockatiel';
import CircuitBreaker from 'opossum';
import pLimit from 'p-limit';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { BenchCase, PreparedSuite, Suite } from '../harness.js';
import { acquireRedis } from '../redis.js';

/** The wrapped operation: the cheapest possible async call, so what is measured is the policy. */
const payload = async () => 42;

const BURST_JOBS = 20_000;
const BURST_LIMIT = 100;
const REDIS_CALLERS = 32;
/** Limits high enough never to refuse: the happy path is what is measured. */
const NEVER_REFUSING_POINTS = 1e12;
const HOT_KEY = 'hot';

/** A burst: `jobs` submissions at once, resolved when every one has settled. */
function burst(jobs: number, submit: () => Promise<unknown>): () => Promise<void> {
  return async () => {
    const pending: Promise<unknown>[] = new Array(jobs);
    for (let i = 0; i < jobs; i++) pending[i] = submit();
    await Promise.all(pending);
  };
}

function singlePolicyCases(): BenchCase[] {
  const cases: BenchCase[] = [{ case: 'bare', impl: 'baseline', kind: 'async', op: payload }];

  // cockatiel's maxAttempts counts retries, Stratus's counts attempts: both allow 3 retries.
  const sRetry = retry({ maxAttempts: 4 });
  const cRetry = cockatielRetry(handleAll, { maxAttempts: 3 });
  cases.push({ case: 'retry', impl: 'stratus', kind: 'async', op: () => sRetry.execute(payload) });
  cases.push({ case: 'retry', impl: 'cockatiel', kind: 'async', op: () => cRetry.execute(payload) });

  const cBreaker = cockatielCircuitBreaker(handleAll, {
    halfOpenAfter: 10_000,
    breaker: new ConsecutiveBreaker(5),
  });
  const oBreakerNoTimeout = new CircuitBreaker(payload, { timeout: false });
  const oBreakerDefaults = new CircuitBreaker(payload);
  const sBreaker = circuitBreaker({ trip: { kind: 'consecutive-failures', failures: 5 }, openMs: 10_000 });
  cases.push(
    { case: 'circuit-breaker', impl: 'stratus', kind: 'async', op: () => sBreaker.execute(payload) },
    { case: 'circuit-breaker', impl: 'cockatiel', kind: 'async', op: () => cBreaker.execute(payload) },
    {
      case: 'circuit-breaker',
      impl: 'opossum (timeout:false)',
      kind: 'async',
      op: () => oBreakerNoTimeout.fire(),
      teardown: () => oBreakerNoTimeout.shutdown(),
    },
    {
      case: 'circuit-breaker',
      impl: 'opossum (defaults)',
      kind: 'async',
      op: () => oBreakerDefaults.fire(),
      teardown: () => oBreakerDefaults.shutdown(),
      note: () => 'opossum defaults: 10 s timeout timer per call, rolling stats',
    },
  );

  const sBulkhead = bulkhead({ maxConcurrent: 1000 });
  const cBulkhead = cockatielBulkhead(1000);
  const limit = pLimit(1000);
  cases.push(
    { case: 'bulkhead', impl: 'stratus', kind: 'async', op: () => sBulkhead.execute(payload) },
    { case: 'bulkhead', impl: 'cockatiel', kind: 'async', op: () => cBulkhead.execute(payload) },
    { case: 'bulkhead', impl: 'p-limit', kind: 'async', op: () => limit(payload) },
  );

  for (const [strategy, label] of [
    [TimeoutStrategy.Cooperative, 'cooperative'],
    [TimeoutStrategy.Aggressive, 'aggressive'],
  ] as const) {
    const sTimeout = timeout({ timeoutMs: 1000, strategy: label });
    const cTimeout = cockatielTimeout(1000, strategy);
    cases.push({
      case: `timeout-${label}`,
      impl: 'stratus',
      kind: 'async',
      op: () => sTimeout.execute(payload),
    });
    cases.push({
      case: `timeout-${label}`,
      impl: 'cockatiel',
      kind: 'async',
      op: () => cTimeout.execute(payload),
    });
  }

  const sFallback = fallback({ fallback: 0 });
  const cFallback = cockatielFallback(handleAll, 0);
  cases.push({ case: 'fallback', impl: 'stratus', kind: 'async', op: () => sFallback.execute(payload) });
  cases.push({ case: 'fallback', impl: 'cockatiel', kind: 'async', op: () => cFallback.execute(payload) });

  const sComposite = pipeline(
    timeout({ timeoutMs: 5000 }),
    retry({ maxAttempts: 4 }),
    circuitBreaker({ trip: { kind: 'consecutive-failures', failures: 5 }, openMs: 10_000 }),
    timeout({ timeoutMs: 1000 }),
  );
  cases.push({ case: 'composite', impl: 'stratus', kind: 'async', op: () => sComposite.execute(payload) });
  const cComposite = wrap(
    cockatielTimeout(5000, TimeoutStrategy.Cooperative),
    cockatielRetry(handleAll, { maxAttempts: 3 }),
    cockatielCircuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    cockatielTimeout(1000, TimeoutStrategy.Cooperative),
  );
  cases.push({ case: 'composite', impl: 'cockatiel', kind: 'async', op: () => cComposite.execute(payload) });
  return cases;
}

function bulkheadThroughputCases(): BenchCase[] {
  const name = 'bulkhead-throughput';
  const sBulkhead = bulkhead({ maxConcurrent: BURST_LIMIT, maxQueued: Number.POSITIVE_INFINITY });
  const cBulkhead = cockatielBulkhead(BURST_LIMIT, Number.POSITIVE_INFINITY);
  const limit = pLimit(BURST_LIMIT);

  // opossum cannot queue: over capacity it rejects, and the rejections count as failures that open the
  // breaker. A fresh breaker per burst, so every burst starts closed; completions and rejections are counted.
  let bursts = 0;
  let completed = 0;
  let rejected = 0;
  const onCompleted = () => {
    completed++;
  };
  const onRejected = () => {
    rejected++;
  };
  const opossumBurst = async () => {
    const breaker = new CircuitBreaker(payload, { capacity: BURST_LIMIT });
    await burst(BURST_JOBS, () => breaker.fire().then(onCompleted, onRejected))();
    breaker.shutdown();
    bursts++;
  };

  return [
    {
      case: name,
      impl: 'stratus',
      kind: 'burst',
      jobs: BURST_JOBS,
      run: burst(BURST_JOBS, () => sBulkhead.execute(payload)),
    },
    {
      case: name,
      impl: 'cockatiel',
      kind: 'burst',
      jobs: BURST_JOBS,
      run: burst(BURST_JOBS, () => cBulkhead.execute(payload)),
    },
    {
      case: name,
      impl: 'p-limit',
      kind: 'burst',
      jobs: BURST_JOBS,
      run: burst(BURST_JOBS, () => limit(payload)),
    },
    {
      case: name,
      impl: 'opossum (capacity)',
      kind: 'burst',
      jobs: BURST_JOBS,
      run: opossumBurst,
      note: () =>
        `rejects overflow instead of queueing: per burst ${Math.round(completed / bursts)} of ` +
        `${BURST_JOBS.toLocaleString('en-US')} ran, ${Math.round(rejected / bursts)} were rejected ` +
        '(semaphore locked, then breaker open); its jobs/s counts the rejections',
    },
  ];
}

/**
 * Fixed window on both sides: rate-limiter-flexible's algorithm is a fixed window too. Its only API is the
 * async `consume`, so it is the peer of each Stratus entry point: async `acquire`, synchronous `tryAcquire`
 * and the policy (there: consume, then call).
 */
function memoryRateLimitCases(): BenchCase[] {
  const rlf = new RateLimiterMemory({ points: NEVER_REFUSING_POINTS, duration: 1 });
  const limiter = fixedWindow({ limit: NEVER_REFUSING_POINTS, windowMs: 1000 });
  const policy = rateLimit({ limiter, key: HOT_KEY });
  const consume = () => rlf.consume(HOT_KEY);
  return [
    { case: 'rate-limit-memory', impl: 'stratus', kind: 'async', op: () => limiter.acquire(HOT_KEY) },
    { case: 'rate-limit-memory', impl: 'rate-limiter-flexible', kind: 'async', op: consume },
    {
      case: 'rate-limit-memory-tryacquire',
      impl: 'stratus',
      kind: 'sync',
      op: () => limiter.tryAcquire(HOT_KEY),
    },
    { case: 'rate-limit-memory-tryacquire', impl: 'rate-limiter-flexible', kind: 'async', op: consume },
    { case: 'rate-limit-memory-policy', impl: 'stratus', kind: 'async', op: () => policy.execute(payload) },
    {
      case: 'rate-limit-memory-policy',
      impl: 'rate-limiter-flexible',
      kind: 'async',
      op: () => rlf.consume(HOT_KEY).then(payload),
    },
  ];
}

async function redisRateLimitCases(
  redis: Extract<Awaited<ReturnType<typeof acquireRedis>>, { skip: false }>,
): Promise<BenchCase[]> {
  const prefix = `stratus-bench:${process.pid}`;
  const rlf = new RateLimiterRedis({
    storeClient: await redis.connect(),
    points: NEVER_REFUSING_POINTS,
    duration: 60,
    keyPrefix: `${prefix}:rlf`,
  });
  const limiter = fixedWindow({
    limit: NEVER_REFUSING_POINTS,
    windowMs: 60_000,
    store: redisStore({ client: await redis.connect(), prefix: `${prefix}:stratus:` }),
  });
  const name = `rate-limit-redis-c${REDIS_CALLERS}`;
  return [
    {
      case: name,
      impl: 'stratus',
      kind: 'async',
      concurrency: REDIS_CALLERS,
      op: () => limiter.acquire(HOT_KEY),
    },
    {
      case: name,
      impl: 'rate-limiter-flexible',
      kind: 'async',
      concurrency: REDIS_CALLERS,
      op: () => rlf.consume(HOT_KEY),
    },
  ];
}

export const resilienceSuite: Suite = {
  name: 'resilience',
  async prepare(): Promise<PreparedSuite> {
    const cases = [...singlePolicyCases(), ...bulkheadThroughputCases(), ...memoryRateLimitCases()];
    const skipped: string[] = [];
    const redis = await acquireRedis();
    let redisSettings: Record<string, unknown>;
    if (redis.skip === false) {
      cases.push(...(await redisRateLimitCases(redis)));
      redisSettings = {
        server: redis.source,
        version: redis.version,
        callers: REDIS_CALLERS,
        key: 'one hot key',
      };
    } else {
      skipped.push(`Redis rate-limiter cases skipped: ${redis.skip}`);
      redisSettings = { skipped: redis.skip };
    }
    return {
      cases,
      skipped,
      settings: {
        payload: 'async () => 42',
        concurrency: 'sequential awaits (1 caller) unless stated',
        retry: '3 retries: Stratus maxAttempts 4, cockatiel maxAttempts 3 (the happy path never retries)',
        circuitBreaker: '5 consecutive failures open it, half-open after 10 s',
        bulkhead: 'single call: limit 1000, no queue',
        timeout: '1000 ms; composite: outer 5000 ms, inner 1000 ms, cooperative',
        fallback: 'fallback value 0',
        bulkheadThroughput: `${BURST_JOBS} jobs submitted at once, limit ${BURST_LIMIT}, unbounded queue`,
        rateLimit: `fixed window, one hot key, ${NEVER_REFUSING_POINTS} permits per window (never refuses)`,
        redis: redisSettings,
      },
      async close() {
        if (redis.skip === false) await redis.close();
      },
    };
  },
};
