import {
  type AcquireRequest,
  type AcquireResult,
  checkAcquireRequest,
  checkHeldLease,
  type LeaseGrant,
  type LeaseHolder,
  type LeaseStore,
} from './lease-store.js';

interface MemoryLease {
  lastToken: number;
  readonly holders: Map<string, LeaseHolder>;
}

const bySoonestExpiry = (a: LeaseHolder, b: LeaseHolder) => a.expiresAt - b.expiresAt;

/** Leases in this process's memory: for tests and for coordinating the tasks of one process. */
export class MemoryLeaseStore implements LeaseStore {
  readonly kind = 'memory';
  readonly #leases = new Map<string, MemoryLease>();

  #live(name: string, now: number): MemoryLease {
    let lease = this.#leases.get(name);
    if (lease === undefined) {
      lease = { lastToken: 0, holders: new Map() };
      this.#leases.set(name, lease);
    }
    for (const [owner, holder] of lease.holders) if (holder.expiresAt <= now) lease.holders.delete(owner);
    return lease;
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const limit = checkAcquireRequest(request);
    const { name, owner, ttlMs, now } = request;
    const lease = this.#live(name, now);
    const expiresAt = now + ttlMs;
    const held = lease.holders.get(owner);
    if (held !== undefined) {
      lease.holders.set(owner, { ...held, expiresAt });
      return { acquired: true, renewed: true, grant: { name, owner, token: held.token, expiresAt } };
    }
    if (lease.holders.size >= limit) {
      return { acquired: false, holders: [...lease.holders.values()].sort(bySoonestExpiry) };
    }
    const token = ++lease.lastToken;
    lease.holders.set(owner, { owner, token, expiresAt });
    return { acquired: true, renewed: false, grant: { name, owner, token, expiresAt } };
  }

  async renew(
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | undefined> {
    checkHeldLease(name, owner, token, ttlMs, now);
    const held = this.#leases.get(name)?.holders.get(owner);
    if (held === undefined || held.token !== token || held.expiresAt <= now) return undefined;
    const expiresAt = now + ttlMs;
    this.#leases.get(name)?.holders.set(owner, { owner, token, expiresAt });
    return { name, owner, token, expiresAt };
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    checkHeldLease(name, owner, token);
    const holders = this.#leases.get(name)?.holders;
    if (holders?.get(owner)?.token !== token) return false;
    return holders.delete(owner);
  }

  async holders(name: string, now: number): Promise<LeaseHolder[]> {
    const lease = this.#leases.get(name);
    if (lease === undefined) return [];
    return [...lease.holders.values()].filter((h) => h.expiresAt > now).sort(bySoonestExpiry);
  }
}
