/**
 * Suite "resilience" (anchors §13 R1, R2, L1): the overhead of each policy wrapped around `async () => 42`,
 * Stratus side by side with cockatiel, opossum, p-limit and rate-limiter-flexible in one process.
 */
import {
  bulkhead,
  chaosFault,
  circuitBreaker,
  fallback,
  fixedWindow,
  gcra,
  hedging,
  PipelineRegistry,
  pipeline,
  type RateLimiter,
  RedisRateLimitStore,
  rateLimit,
  retry,
  slidingWindowCounter,
  slidingWindowLog,
  timeout,
  tokenBucket,
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
import { acquireRedis, type RedisTarget } from '../redis.js';

/** The wrapped operation: the cheapest possible async call, so what is measured is the policy. */
const payload = async () => 42;

const BURST_JOBS = 20_000;
const BURST_LIMIT = 100;
const REDIS_CALLERS = 32;
/** Limits high enough never to refuse: the happy path is what is measured. */
const NEVER_REFUSING_POINTS = 1e12;
/**
 * The rate (permits per second) of the Redis algorithms other than the fixed window: over 5x what one Redis
 * serves here, so never refusing, yet small enough for GCRA's emission interval (1 µs) to move a millisecond
 * timestamp (a double near 1.7e12 resolves about 0.2 µs).
 */
const REDIS_RATE_PER_SECOND = 1_000_000;
/** The sliding log keeps one entry per permit and allows at most 100,000: its window is 100 ms. */
const SLIDING_LOG_LIMIT = 100_000;
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

  const sComposite = buildComposite(compositeOptions);
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

/** The composite's settings, as a pipeline registry would read them from configuration. */
interface CompositeOptions {
  readonly outerTimeoutMs: number;
  readonly maxAttempts: number;
  readonly failures: number;
  readonly openMs: number;
  readonly innerTimeoutMs: number;
}

const compositeOptions: CompositeOptions = {
  outerTimeoutMs: 5000,
  maxAttempts: 4,
  failures: 5,
  openMs: 10_000,
  innerTimeoutMs: 1000,
};

function buildComposite(o: CompositeOptions) {
  return pipeline(
    timeout({ timeoutMs: o.outerTimeoutMs }),
    retry({ maxAttempts: o.maxAttempts }),
    circuitBreaker({ trip: { kind: 'consecutive-failures', failures: o.failures }, openMs: o.openMs }),
    timeout({ timeoutMs: o.innerTimeoutMs }),
  );
}

/**
 * Strategies no Node peer has (Polly v8's hedging, Simmy's chaos, the pipeline registry), so their overhead
 * is published on its own: set their "ns/op over bare" beside the other policies'.
 */
function stratusOnlyCases(): BenchCase[] {
  // The primary answers at once: the hedge delay is armed on the shared deadline timer and disarmed again.
  const sHedging = hedging({ maxHedgedAttempts: 1, delayMs: 1000 });
  // Switched off: with injectionRate 1 every call would fail if the switch were not honoured.
  const chaosDisabled = chaosFault({ injectionRate: 1, enabled: false, fault: new Error('chaos') });
  const chaosRate0 = chaosFault({ injectionRate: 0, fault: new Error('chaos') });
  // A handle of the composite above, built by the registry from the same options: compare the two rows.
  const registered = new PipelineRegistry().define('composite', buildComposite, compositeOptions);
  const stratus = (name: string, op: () => PromiseLike<unknown>): BenchCase => ({
    case: name,
    impl: 'stratus',
    kind: 'async',
    op,
  });
  return [
    stratus('pipeline-registry', () => registered.execute(payload)),
    stratus('hedging', () => sHedging.execute(payload)),
    stratus('chaos-disabled', () => chaosDisabled.execute(payload)),
    stratus('chaos-rate-0', () => chaosRate0.execute(payload)),
  ];
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

/**
 * A Stratus limiter on Redis as a case: 32 concurrent callers on one hot key. Refusals are counted (the
 * `limited` event costs nothing on the allowed path) and noted, since a refused call is not the happy path.
 * `report`, if given, runs once the case is done and its answer is noted too.
 */
function redisLimiterCase(name: string, limiter: RateLimiter, report?: () => Promise<string>): BenchCase {
  let refused = 0;
  let reported: string | undefined;
  limiter.events.on((event) => {
    if (event.type === 'limited') refused++;
  });
  return {
    case: name,
    impl: 'stratus',
    kind: 'async',
    concurrency: REDIS_CALLERS,
    op: () => limiter.acquire(HOT_KEY),
    teardown: async () => {
      reported = await report?.();
    },
    note: () => {
      const notes = reported === undefined ? [] : [reported];
      if (refused > 0)
        notes.push(`${refused} calls REFUSED: the limit is too low, this is not the happy path`);
      return notes.length > 0 ? notes.join('; ') : undefined;
    },
  };
}

async function redisRateLimitCases(redis: Extract<RedisTarget, { skip: false }>): Promise<BenchCase[]> {
  const prefix = `stratus-bench:${process.pid}`;
  const stratusPrefix = `${prefix}:stratus:`;
  // One connection per limiter, so none queues behind another's commands.
  const store = async () => new RedisRateLimitStore({ client: await redis.connect(), prefix: stratusPrefix });
  const rlf = new RateLimiterRedis({
    storeClient: await redis.connect(),
    points: NEVER_REFUSING_POINTS,
    duration: 60,
    keyPrefix: `${prefix}:rlf`,
  });
  const fixed = fixedWindow({ limit: NEVER_REFUSING_POINTS, windowMs: 60_000, store: await store() });
  const c = `c${REDIS_CALLERS}`;
  const windowMs = 1000;

  // The log costs one sorted-set member per permit of its window: say how many and how much memory.
  const logClient = await redis.connect();
  const logWindowMs = (SLIDING_LOG_LIMIT * windowMs) / REDIS_RATE_PER_SECOND;
  const slidingLog = slidingWindowLog({
    limit: SLIDING_LOG_LIMIT,
    windowMs: logWindowMs,
    store: new RedisRateLimitStore({ client: logClient, prefix: stratusPrefix }),
  });
  const reportLog = async () => {
    const { remaining } = await slidingLog.acquire(HOT_KEY, 0);
    const bytes = await logClient.memory('USAGE', `${stratusPrefix}${slidingLog.name}:${HOT_KEY}`);
    return (
      `the log held ${(SLIDING_LOG_LIMIT - remaining).toLocaleString('en-US')} entries ` +
      `(${((bytes ?? 0) / 2 ** 20).toFixed(1)} MiB in Redis) as the case ended`
    );
  };

  return [
    redisLimiterCase(`rate-limit-redis-${c}`, fixed),
    {
      case: `rate-limit-redis-${c}`,
      impl: 'rate-limiter-flexible',
      kind: 'async',
      concurrency: REDIS_CALLERS,
      op: () => rlf.consume(HOT_KEY),
    },
    redisLimiterCase(
      `rate-limit-redis-token-bucket-${c}`,
      tokenBucket({
        capacity: REDIS_RATE_PER_SECOND,
        refillRate: REDIS_RATE_PER_SECOND,
        refillIntervalMs: windowMs,
        store: await store(),
      }),
    ),
    redisLimiterCase(
      `rate-limit-redis-gcra-${c}`,
      gcra({ limit: REDIS_RATE_PER_SECOND, periodMs: windowMs, store: await store() }),
    ),
    redisLimiterCase(
      `rate-limit-redis-sliding-counter-${c}`,
      slidingWindowCounter({ limit: REDIS_RATE_PER_SECOND, windowMs, store: await store() }),
    ),
    redisLimiterCase(`rate-limit-redis-sliding-log-${c}`, slidingLog, reportLog),
  ];
}

export const resilienceSuite: Suite = {
  name: 'resilience',
  async prepare(): Promise<PreparedSuite> {
    const cases = [
      ...singlePolicyCases(),
      ...stratusOnlyCases(),
      ...bulkheadThroughputCases(),
      ...memoryRateLimitCases(),
    ];
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
        fixedWindow: `${NEVER_REFUSING_POINTS} permits per 60 s window, both implementations`,
        stratusOnly:
          `${REDIS_RATE_PER_SECOND} permits/s: token bucket (capacity = refill per second), GCRA (burst = ` +
          'limit per second), sliding window counter (1 s window), sliding window log ' +
          `(${SLIDING_LOG_LIMIT} per ${(SLIDING_LOG_LIMIT * 1000) / REDIS_RATE_PER_SECOND} ms, its maximum limit)`,
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
        hedging: 'Stratus only: maxHedgedAttempts 1, delayMs 1000 (the primary wins, no hedge is launched)',
        chaos: 'Stratus only: chaosFault disabled (enabled: false, injectionRate 1), and injectionRate 0',
        pipelineRegistry:
          'Stratus only: a PipelineRegistry handle of the composite, built from the same options',
        bulkheadThroughput: `${BURST_JOBS} jobs submitted at once, limit ${BURST_LIMIT}, unbounded queue`,
        rateLimit: `memory: fixed window, one hot key, ${NEVER_REFUSING_POINTS} permits per window (never refuses)`,
        redis: redisSettings,
      },
      async close() {
        if (redis.skip === false) await redis.close();
      },
    };
  },
};
