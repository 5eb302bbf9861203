import { StratusError } from '@stratus/core';

/** A write refused because a newer fencing token has already written to the resource. */
export class StaleFencingTokenError extends StratusError {
  readonly resource: string;
  readonly token: number;
  readonly current: number;
  constructor(resource: string, token: number, current: number) {
    super(
      'ERR_STRATUS_STALE_FENCING_TOKEN',
      `Fencing token ${token} for "${resource}" is stale: token ${current} has written since`,
    );
    this.resource = resource;
    this.token = token;
    this.current = current;
  }
}

/** A lock or semaphore slot not obtained within its wait time. */
export class LockTimeoutError extends StratusError {
  readonly lockName: string;
  readonly waitedMs: number;
  constructor(name: string, waitedMs: number) {
    super('ERR_STRATUS_LOCK_TIMEOUT', `Lock "${name}" not acquired within ${waitedMs} ms`);
    this.lockName = name;
    this.waitedMs = waitedMs;
  }
}

/** The work's lease (a lock or a leadership) was lost: renewal refused, the store unreachable past expiry. */
export class LeaseLostError extends StratusError {
  readonly leaseName: string;
  constructor(name: string, reason: string) {
    super('ERR_STRATUS_LEASE_LOST', `Lease "${name}" lost: ${reason}`);
    this.leaseName = name;
  }
}
