/**
 * The RateLimit fields and Retry-After of a reply. A request may pass one limit and be refused by another (an order
 * look-up within its rate, then locked out for wrong codes): each adds its fields to those already set, combined as
 * @stratus/resilience combines limiters (an item per policy in RateLimit and RateLimit-Policy, the legacy fields of
 * the most restrictive, the latest Retry-After), so that a client sees every limit it is under.
 */
import { combineRateLimitHeaders } from '@stratus/resilience';
import type { FastifyReply } from 'fastify';

const FIELDS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'Retry-After',
] as const;

/** Adds one limit's fields (from rateLimitHeaders) to the reply's. */
export function addRateLimitFields(reply: FastifyReply, added: Readonly<Record<string, string>>): void {
  if (Object.keys(added).length === 0) return;
  const existing: Record<string, string | undefined> = {};
  for (const name of FIELDS) {
    const value = reply.getHeader(name);
    if (value !== undefined) existing[name] = String(value);
  }
  void reply.headers(combineRateLimitHeaders(existing, added));
}
