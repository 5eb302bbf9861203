/**
 * The web's abuse limits (README: Abuse limits), built from @stratus/resilience's sliding-window limiters on the
 * system's rate-limit store (this process's memory on the embedded default, Redis or PostgreSQL shared by every web
 * process when scaled out), keyed by client (the address Fastify sees, `request.ip`: see TRUST_PROXY):
 *
 * - request rates per client: owner log-ins and sign-ins, order look-ups, orders placed, conferences created;
 * - bad signatures on the payment webhook per client;
 * - the lockout after wrong access codes (code-lockout.ts), per target and per client;
 * - caps on what one client holds of one conference: orders and seats within a reservation window (an unpaid order
 *   holds its seats at most that long), so that a script cannot hold every seat by renewing orders.
 *
 * Refusals are TooManyRequestsError (429 with Retry-After and the RateLimit fields). Without settings
 * (RATE_LIMITS=off) nothing is limited.
 */
import type { Clock } from '@stratus/core';
import {
  type RateLimiter,
  type RateLimitStore,
  rateLimitHeaders,
  slidingWindowLog,
} from '@stratus/resilience';
import type { AbuseLimitSettings, RatePerWindow } from '../../app/abuse-settings.js';
import type { ConferenceSystem } from '../../app/system.js';
import { InvalidOperationError } from '../../domain/errors.js';
import { CodeLockout } from './code-lockout.js';
import { inWords, TooManyRequestsError } from './too-many-requests.js';

/** What a request rate limits. */
export type RateLimitKind = 'signIn' | 'orderLookup' | 'orders' | 'conferences' | 'webhookFailures';

const POLICIES: Readonly<Record<RateLimitKind, string>> = {
  signIn: 'sign-in',
  orderLookup: 'order-lookup',
  orders: 'orders',
  conferences: 'conferences',
  webhookFailures: 'webhook-failures',
};

export interface AbuseLimitsOptions {
  readonly store: RateLimitStore;
  readonly clock: Clock;
  /** How long an unpaid order holds its seats (the caps' window). */
  readonly holdWindowMs: number;
}

interface Limits {
  readonly rates: Readonly<Record<RateLimitKind, RateLimiter>>;
  readonly lockout: CodeLockout;
  readonly orders: RateLimiter;
  readonly seats: RateLimiter;
}

export class AbuseLimits {
  readonly #limits: Limits | undefined;

  constructor(settings: AbuseLimitSettings | undefined, options: AbuseLimitsOptions) {
    if (settings === undefined) return;
    const { store, clock, holdWindowMs } = options;
    const limiter = (name: string, { limit, windowMs }: RatePerWindow) =>
      slidingWindowLog({ name, limit, windowMs, store, clock });
    const rates = {} as Record<RateLimitKind, RateLimiter>;
    for (const kind of Object.keys(POLICIES) as RateLimitKind[])
      rates[kind] = limiter(POLICIES[kind], settings[kind]);
    this.#limits = {
      rates,
      lockout: new CodeLockout({
        after: settings.lockoutAfter,
        firstLockMs: settings.lockoutMs,
        store,
        clock,
      }),
      orders: limiter('open-orders', { limit: settings.openOrdersPerClient, windowMs: holdWindowMs }),
      seats: limiter('held-seats', { limit: settings.heldSeatsPerClient, windowMs: holdWindowMs }),
    };
  }

  /**
   * Counts a request of `kind` from `client`: answers the RateLimit fields to send with it, or throws
   * TooManyRequestsError when the client has made too many.
   */
  async charge(kind: RateLimitKind, client: string): Promise<Readonly<Record<string, string>>> {
    const limiter = this.#limits?.rates[kind];
    if (limiter === undefined) return {};
    const result = await limiter.acquire(client);
    const windowMs = limiter.windowMs ?? 0;
    if (!result.allowed) throw TooManyRequestsError.of('Too many requests.', result, limiter.name, windowMs);
    return rateLimitHeaders(result, { policy: limiter.name, windowMs });
  }

  /**
   * Checks the signature of a payment webhook call (`verify` throws on a bad one). Only bad signatures count: a
   * processor's callbacks come from few addresses, and a client that has sent too many bad ones is refused without
   * checking, so guessing signatures costs the app little and gets the guesser nowhere.
   */
  async verifySignature(client: string, verify: () => void): Promise<void> {
    const limiter = this.#limits?.rates.webhookFailures;
    if (limiter === undefined) return verify();
    const windowMs = limiter.windowMs ?? 0;
    const state = await limiter.acquire(client, 0);
    if (state.remaining <= 0) {
      const refused = { ...state, allowed: false, retryAfterMs: state.resetMs };
      throw TooManyRequestsError.of('Too many bad signatures.', refused, limiter.name, windowMs);
    }
    try {
      verify();
    } catch (error) {
      await limiter.acquire(client);
      throw error;
    }
  }

  /**
   * Checks an access code: `check` answers what the code opens, or undefined for a wrong code. While `target` (the
   * conference or e-mail the code is for) or `client` is locked out, throws TooManyRequestsError without checking;
   * a wrong code counts against both, the right one clears the target's count.
   */
  async checkCode<T>(
    target: string,
    client: string,
    check: () => Promise<T | undefined>,
  ): Promise<T | undefined> {
    const lockout = this.#limits?.lockout;
    if (lockout === undefined) return check();
    const keys = [`target ${target.toLowerCase()}`, `client ${client}`];
    await lockout.assertOpen(keys);
    const opened = await check();
    if (opened === undefined) await lockout.failed(keys);
    else await lockout.succeeded(keys[0] as string);
    return opened;
  }

  /**
   * Takes `orders` new orders and `seats` more seats of a conference for a client, or throws TooManyRequestsError
   * when that would pass the caps (InvalidOperationError when `seats` alone is over the seat cap).
   */
  async hold(conferenceId: string, client: string, orders: number, seats: number): Promise<void> {
    const limits = this.#limits;
    if (limits === undefined || (orders <= 0 && seats <= 0)) return;
    const key = `${conferenceId} ${client}`;
    const window = inWords(limits.orders.windowMs ?? 0);
    if (seats > limits.seats.limit)
      throw new InvalidOperationError(
        `At most ${limits.seats.limit} seats of a conference can be held at once.`,
      );
    const ordersFull =
      `At most ${limits.orders.limit} orders of this conference can be placed from one client within ${window}: ` +
      'pay for one or let it expire.';
    const seatsFull = `At most ${limits.seats.limit} seats of this conference can be held by one client within ${window}.`;
    // The seats are taken once the orders' cap has room, so that a refusal over orders takes no seats.
    const ordersTaken = orders > 0 && (await this.#takeIfFull(limits.orders, key, orders, ordersFull));
    if (seats > 0) await this.#take(limits.seats, key, seats, seatsFull);
    if (orders > 0 && !ordersTaken) await this.#take(limits.orders, key, orders, ordersFull);
  }

  async #take(limiter: RateLimiter, key: string, cost: number, message: string): Promise<void> {
    const result = await limiter.acquire(key, cost);
    if (!result.allowed)
      throw TooManyRequestsError.of(message, result, limiter.name, limiter.windowMs ?? 0, cost);
  }

  /**
   * Throws when `limiter` has no room for `cost`, taking nothing; answers whether it took `cost` (room appeared
   * between reading and refusing), false when it had room and took nothing.
   */
  async #takeIfFull(limiter: RateLimiter, key: string, cost: number, message: string): Promise<boolean> {
    if ((await limiter.acquire(key, 0)).remaining >= cost) return false;
    await this.#take(limiter, key, cost, message);
    return true;
  }
}

/** The limits of a system's web part, as its configuration sets them. */
export function abuseLimitsFor(
  system: Pick<ConferenceSystem, 'config' | 'rateLimits' | 'clock'>,
): AbuseLimits {
  return new AbuseLimits(system.config.abuseLimits, {
    store: system.rateLimits,
    clock: system.clock,
    holdWindowMs: system.config.reservationWindowMs,
  });
}
