import {
  assertDuration,
  assertInteger,
  assertNumber,
  assertObject,
  InvalidOptionsError,
} from '@stratus/core';

/**
 * The lease port: named leases held by owners until an expiry, each grant stamped with a fencing token. A lease
 * admits up to `limit` holders (1: a mutex or a leadership; more: a semaphore). Tokens of a name only grow: every
 * new grant takes the next one (a renewal keeps its token), and they are never reused, even after a release, so a
 * store guarded by the token can tell a newer holder's write from an older one's.
 *
 * Times are epoch milliseconds from the caller's clock (`now`), as in the rest of Stratus, so a virtual clock drives
 * expiry in tests; processes sharing a store need synchronised clocks, and fencing covers the rest.
 */

export interface LeaseHolder {
  readonly owner: string;
  /** The fencing token of this grant. */
  readonly token: number;
  /** The holder is live while `now < expiresAt`. */
  readonly expiresAt: number;
}

export interface LeaseGrant extends LeaseHolder {
  readonly name: string;
}

export interface AcquireRequest {
  readonly name: string;
  readonly owner: string;
  readonly ttlMs: number;
  readonly now: number;
  /** Holders admitted at once; default 1. Use the same limit for every acquisition of a name. */
  readonly limit?: number;
}

export type AcquireResult =
  | { readonly acquired: true; readonly grant: LeaseGrant; readonly renewed: boolean }
  | {
      readonly acquired: false;
      /** Who holds it now, soonest expiry first. */
      readonly holders: readonly LeaseHolder[];
    };

export interface LeaseStore {
  readonly kind: string;
  /**
   * Grants the lease to `owner` when fewer than `limit` live holders have it (expired ones are dropped first), with
   * a new token; when `owner` already holds it, extends it and keeps its token (`renewed: true`).
   */
  acquire(request: AcquireRequest): Promise<AcquireResult>;
  /** Extends a live grant to now + ttlMs; undefined when `owner` no longer holds it with `token` (expired, taken). */
  renew(
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | undefined>;
  /** Gives a grant back; false when it was no longer held. */
  release(name: string, owner: string, token: number): Promise<boolean>;
  /** The live holders at `now`, soonest expiry first. */
  holders(name: string, now: number): Promise<LeaseHolder[]>;
}

const MAX_NAME_LENGTH = 200;

function checkText(option: string, value: unknown): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new InvalidOptionsError(option, `expected a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
}

/** Validates an acquisition before any adapter touches its backend; returns the limit to apply. */
export function checkAcquireRequest(request: AcquireRequest): number {
  assertObject('request', request as unknown);
  checkText('name', request.name);
  checkText('owner', request.owner);
  assertDuration('ttlMs', request.ttlMs, { allowZero: false });
  assertNumber('now', request.now, 0);
  const limit = request.limit ?? 1;
  assertInteger('limit', limit, 1);
  return limit;
}

/** Validates the arguments of renew and release. */
export function checkHeldLease(name: string, owner: string, token: number, ttlMs = 1, now = 0): void {
  checkText('name', name);
  checkText('owner', owner);
  assertInteger('token', token, 1);
  assertDuration('ttlMs', ttlMs, { allowZero: false });
  assertNumber('now', now, 0);
}
