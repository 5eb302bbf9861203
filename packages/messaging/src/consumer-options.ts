import {
  assertDuration,
  assertInteger,
  type Backoff,
  exponentialBackoff,
  InvalidOptionsError,
} from '@stratus/core';
import type { RateLimiter } from '@stratus/resilience';

export interface ConsumerOptions {
  /** Handlers running at once in this process; default 1. */
  concurrency?: number;
  /** Messages locked ahead of free handler slots, to hide the receive round trip; default 0. */
  prefetch?: number;
  /** Lock duration of each receive; default the queue's. */
  lockMs?: number;
  /** Renew locks of held messages before they expire; default true. */
  autoRenew?: boolean;
  /** Stop renewing a message's lock after this long (a handler stuck for good lets its message go); default 5 min. */
  maxRenewMs?: number;
  /** Delay before a failed message is delivered again, by delivery count; default exponential 1 s ×2 up to 60 s. */
  retryBackoff?: Backoff;
  /**
   * What follows when the handler failed on a message in all of the queue's `maxDeliveryCount` deliveries (a
   * poison message). 'dead-letter' (default): it is dead-lettered (on a sessions queue its session waits for it,
   * see the queue's `onSessionDeadLetter`) and the consumer goes on. 'stop': it is dead-lettered, then the consumer
   * stops (as `close()` does) and `stopped` rejects with PoisonMessageError.
   */
  onPoison?: 'dead-letter' | 'stop';
  /**
   * Queue-Based Load Leveling: a limiter from @stratus/resilience consulted before each handler starts, so a
   * backlog drains at the limiter's rate (a Redis or PostgreSQL store makes it one rate for all processes).
   */
  rateLimit?: RateLimiter;
  /** Key under which the rate limiter counts; default the queue name. */
  rateLimitKey?: string;
  /**
   * On a sessions queue, how many of a session's messages one receive may lock together; default 1. They run one
   * after another in one handler slot, in order, each completed as the next one starts, so a busy session costs one
   * round trip per message instead of two. Backends without session batches (PostgreSQL) lock one at a time.
   */
  sessionBatch?: number;
  /** Safety-net poll while idle, in case a wake-up signal was missed; default 5 s. */
  idlePollMs?: number;
  /** Default deadline of close(); default 30 s. */
  shutdownTimeoutMs?: number;
}

/** ConsumerOptions validated, with their defaults. */
export interface ConsumerSettings {
  readonly concurrency: number;
  readonly prefetch: number;
  readonly lockMs: number | undefined;
  readonly autoRenew: boolean;
  readonly maxRenewMs: number;
  readonly retryBackoff: Backoff;
  readonly onPoison: 'dead-letter' | 'stop';
  readonly rateLimit: RateLimiter | undefined;
  readonly rateLimitKey: string;
  readonly idlePollMs: number;
  readonly shutdownTimeoutMs: number;
  readonly sessionBatch: number;
}

/** Validates the options of a consumer of `queue`; throws InvalidOptionsError naming the first bad one. */
export function consumerSettings(queue: string, options: ConsumerOptions): ConsumerSettings {
  const concurrency = options.concurrency ?? 1;
  assertInteger('concurrency', concurrency, 1, 10_000);
  const prefetch = options.prefetch ?? 0;
  assertInteger('prefetch', prefetch, 0, 10_000);
  if (options.lockMs !== undefined) assertDuration('lockMs', options.lockMs, { allowZero: false });
  const maxRenewMs = options.maxRenewMs ?? 5 * 60_000;
  assertDuration('maxRenewMs', maxRenewMs);
  const idlePollMs = options.idlePollMs ?? 5000;
  assertDuration('idlePollMs', idlePollMs, { allowZero: false });
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 30_000;
  assertDuration('shutdownTimeoutMs', shutdownTimeoutMs);
  const sessionBatch = options.sessionBatch ?? 1;
  assertInteger('sessionBatch', sessionBatch, 1, 1000);
  const onPoison = options.onPoison ?? 'dead-letter';
  if (onPoison !== 'dead-letter' && onPoison !== 'stop')
    throw new InvalidOptionsError('onPoison', "expected 'dead-letter' or 'stop'");
  return {
    concurrency,
    prefetch,
    lockMs: options.lockMs,
    autoRenew: options.autoRenew ?? true,
    maxRenewMs,
    retryBackoff:
      options.retryBackoff ?? exponentialBackoff({ initialMs: 1000, maxMs: 60_000, jitter: 'equal' }),
    onPoison,
    rateLimit: options.rateLimit,
    rateLimitKey: options.rateLimitKey ?? queue,
    idlePollMs,
    shutdownTimeoutMs,
    sessionBatch,
  };
}
