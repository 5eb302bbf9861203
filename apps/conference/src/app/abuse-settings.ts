/**
 * The settings of the web's abuse limits (README: Abuse limits): request rates per client, the lockout after wrong
 * access codes, and the caps on what one client may hold of a conference. All on by default; RATE_LIMITS=off
 * switches every one of them off (load tests and benchmarks drive many orders from one client).
 */
import { InvalidOptionsError } from '@stratus/core';
import { flag, positiveSeconds, wholeNumber } from './env-values.js';

/** At most `limit` requests in any `windowMs`. */
export interface RatePerWindow {
  readonly limit: number;
  readonly windowMs: number;
}

export interface AbuseLimitSettings {
  /** Owner log-ins and sign-ins (access-code checks) per client (RATE_LIMIT_SIGN_IN, default 10/60). */
  readonly signIn: RatePerWindow;
  /** Order look-ups by e-mail and access code per client (RATE_LIMIT_ORDER_LOOKUP, default 10/60). */
  readonly orderLookup: RatePerWindow;
  /** Orders placed per client (RATE_LIMIT_ORDERS, default 10/60). */
  readonly orders: RatePerWindow;
  /** Conference creations (attempts) per client (RATE_LIMIT_CONFERENCES, default 10/3600). */
  readonly conferences: RatePerWindow;
  /** Payment webhook calls with a bad signature per client (RATE_LIMIT_WEBHOOK_FAILURES, default 10/60). */
  readonly webhookFailures: RatePerWindow;
  /** Wrong access codes, per conference (or e-mail) and per client, before a lockout (LOCKOUT_AFTER, default 5). */
  readonly lockoutAfter: number;
  /** The first lockout; later ones last longer (LOCKOUT_SECONDS, default 60). */
  readonly lockoutMs: number;
  /** Orders one client may place for one conference within a reservation window (MAX_OPEN_ORDERS_PER_CLIENT, 5). */
  readonly openOrdersPerClient: number;
  /** Seats one client may order of one conference within a reservation window (MAX_HELD_SEATS_PER_CLIENT, 50). */
  readonly heldSeatsPerClient: number;
}

/** Fastify's trustProxy: none, every proxy, or the proxies' addresses (comma-separated, CIDR allowed). */
export type TrustProxy = boolean | string;

/** `limit/seconds`, e.g. 10/60: at most 10 in any 60 seconds. */
function perWindow(env: NodeJS.ProcessEnv, name: string, fallback: RatePerWindow): RatePerWindow {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^(\d{1,6})\/(\d{1,7})$/.exec(raw.trim());
  const limit = Number(match?.[1]);
  const seconds = Number(match?.[2]);
  if (match === null || limit < 1 || seconds < 1)
    throw new InvalidOptionsError(
      name,
      `expected <requests>/<seconds> such as 10/60, got ${JSON.stringify(raw)}`,
    );
  return { limit, windowMs: seconds * 1000 };
}

export function abuseLimitsFromEnv(env: NodeJS.ProcessEnv): AbuseLimitSettings | undefined {
  if (!flag(env, 'RATE_LIMITS', true)) return undefined;
  return {
    signIn: perWindow(env, 'RATE_LIMIT_SIGN_IN', { limit: 10, windowMs: 60_000 }),
    orderLookup: perWindow(env, 'RATE_LIMIT_ORDER_LOOKUP', { limit: 10, windowMs: 60_000 }),
    orders: perWindow(env, 'RATE_LIMIT_ORDERS', { limit: 10, windowMs: 60_000 }),
    conferences: perWindow(env, 'RATE_LIMIT_CONFERENCES', { limit: 10, windowMs: 3_600_000 }),
    webhookFailures: perWindow(env, 'RATE_LIMIT_WEBHOOK_FAILURES', { limit: 10, windowMs: 60_000 }),
    lockoutAfter: wholeNumber(env, 'LOCKOUT_AFTER', 5, 1, 1000),
    lockoutMs: positiveSeconds(env, 'LOCKOUT_SECONDS', 60_000),
    openOrdersPerClient: wholeNumber(env, 'MAX_OPEN_ORDERS_PER_CLIENT', 5, 1, 100_000),
    heldSeatsPerClient: wholeNumber(env, 'MAX_HELD_SEATS_PER_CLIENT', 50, 1, 100_000),
  };
}

export function trustProxyFromEnv(env: NodeJS.ProcessEnv): TrustProxy {
  const raw = env.TRUST_PROXY?.trim();
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (!/^[0-9a-fA-F.:/, ]+$/.test(raw))
    throw new InvalidOptionsError(
      'TRUST_PROXY',
      `expected true, false or proxy addresses, got ${JSON.stringify(raw)}`,
    );
  return raw;
}
