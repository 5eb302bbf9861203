import type { CircuitTransitionReason } from './circuit-breaker.js';
import type { CircuitSync, CircuitSyncHost, LocalTransition } from './circuit-sync.js';
import type { QuorumReport } from './state-store.js';
import type { StoreLink } from './store-link.js';

export interface QuorumSyncSettings {
  readonly key: string;
  readonly instanceId: string;
  readonly heartbeatMs: number;
  readonly ttlMs: number;
  readonly minInstances: number;
  readonly ratio: number | undefined;
}

/** Openings that come from this instance's own calls: they make its verdict "failing". */
const OWN_EVIDENCE: ReadonlySet<CircuitTransitionReason> = new Set([
  'trip-rule',
  'retry-after',
  'trial-failed',
]);

/**
 * Mode 'quorum' (the design proposed in Polly #287): every instance heartbeats its own verdict, and opens
 * its circuit when enough live instances report failing. An opening caused by the quorum is not itself
 * evidence, so it does not make this instance's verdict failing (no self-sustaining loop); only failures
 * reported since this instance last closed can open it again, so an instance whose trials just succeeded is
 * not reopened by reports older than its own recovery.
 */
export class QuorumCircuitSync implements CircuitSync {
  readonly #host: CircuitSyncHost;
  readonly #link: StoreLink;
  readonly #settings: QuorumSyncSettings;
  #failing = false;
  #since: number;
  #lastClosedAt = 0;

  constructor(host: CircuitSyncHost, link: StoreLink, settings: QuorumSyncSettings) {
    this.#host = host;
    this.#link = link;
    this.#settings = settings;
    this.#since = host.clock.now();
    link.every(settings.heartbeatMs, () => this.sync());
    void this.sync();
  }

  get available(): boolean {
    return this.#link.available;
  }

  transitioned(change: LocalTransition): void {
    const now = this.#host.clock.now();
    if (change.to === 'closed') {
      this.#lastClosedAt = now;
      this.#setVerdict(false, now);
    } else if (change.to === 'open' && OWN_EVIDENCE.has(change.reason)) {
      this.#setVerdict(true, now);
    }
  }

  async sync(): Promise<void> {
    if (this.#link.stopped) return;
    await this.#link
      .serial(async () => {
        const now = this.#host.clock.now();
        const reports = await this.#link.call((store) =>
          store.report(this.#settings.key, this.#report(now + this.#settings.ttlMs), now),
        );
        if (this.#quorumReached(reports)) this.#host.openByQuorum();
      })
      .catch(() => {});
  }

  async dispose(): Promise<void> {
    this.#link.stop();
    // Withdraw at once rather than linger as a live (possibly failing) voter until the TTL runs out.
    const now = this.#host.clock.now();
    await this.#link
      .serial(() => this.#link.call((store) => store.report(this.#settings.key, this.#report(now), now)))
      .catch(() => {});
  }

  #report(expiresAt: number): QuorumReport {
    return { instanceId: this.#settings.instanceId, failing: this.#failing, since: this.#since, expiresAt };
  }

  #quorumReached(reports: readonly QuorumReport[]): boolean {
    const { minInstances, ratio } = this.#settings;
    let failing = 0;
    let fresh = false;
    for (const report of reports) {
      if (!report.failing) continue;
      failing++;
      if (report.since > this.#lastClosedAt) fresh = true;
    }
    return fresh && failing >= minInstances && (ratio === undefined || failing >= ratio * reports.length);
  }

  #setVerdict(failing: boolean, now: number): void {
    if (failing === this.#failing) return;
    this.#failing = failing;
    this.#since = now;
    // Tell the others now rather than at the next heartbeat.
    void this.sync();
  }
}
