/**
 * Where projections keep their materialized views: a database (SQLite, PostgreSQL) that commits a batch of view
 * writes together with the position the view has reached, so replaying events is idempotent, and that records which
 * version of each view serves reads (blue/green rebuilds) and which runner may write it (a lease, checked again at
 * every commit, so a runner that lost its lease — paused, partitioned — can no longer write).
 */

export type ViewStatus = 'building' | 'active' | 'retired';

export interface ViewVersionState {
  readonly name: string;
  readonly version: number;
  readonly status: ViewStatus;
  /** The global position of the last event applied (0: none). */
  readonly position: number;
  /** Epoch ms when the last event applied was recorded (0: none): the base of the time lag. */
  readonly lastEventAt: number;
  readonly owner: string | undefined;
  readonly leaseUntil: number;
}

export interface ProjectionTarget<Tx> {
  readonly kind: string;
  /**
   * Registers a version of a view (status 'building', position 0) and runs `setup` (create its tables) in the same
   * transaction, once: later calls find it registered and do nothing.
   */
  prepare(name: string, version: number, setup: (tx: Tx) => void | Promise<void>): Promise<void>;
  /**
   * Takes or renews the lease on a view version for `owner` until now + ttlMs; false while another owner holds an
   * unexpired one.
   */
  acquireLease(name: string, version: number, owner: string, now: number, ttlMs: number): Promise<boolean>;
  releaseLease(name: string, version: number, owner: string): Promise<void>;
  /**
   * Runs `apply` in one transaction and, in it, moves the view's position to `position` — only if `owner` still
   * holds the lease and the view is still at `from`; otherwise rolls everything back and returns false.
   */
  commit(
    name: string,
    version: number,
    owner: string,
    from: number,
    position: number,
    lastEventAt: number,
    apply: (tx: Tx) => void | Promise<void>,
  ): Promise<boolean>;
  /** Makes `version` the one that serves reads; the version active before is marked retired. */
  activate(name: string, version: number): Promise<void>;
  /** Every registered version of a view, oldest first. */
  versions(name: string): Promise<ViewVersionState[]>;
  /** Drops a version's registration after `teardown` (drop its tables) ran in the same transaction. */
  remove(name: string, version: number, teardown: (tx: Tx) => void | Promise<void>): Promise<void>;
}

/** The version of a view that serves reads, if any. */
export async function activeVersion<Tx>(
  target: ProjectionTarget<Tx>,
  name: string,
): Promise<number | undefined> {
  return (await target.versions(name)).find((state) => state.status === 'active')?.version;
}
