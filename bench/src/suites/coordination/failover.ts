/**
 * Leader failover after a SIGKILL, per lease store backend, through the coordination package's chaos fixture
 * (packages/coordination/src/fixtures/leader-chaos.ts and candidate.ts): five candidate processes, each a
 * LeaderElection on the backend; the leader is SIGKILLed and replaced, again and again. Only kills here (the fixture
 * also pauses leaders with SIGSTOP when its random number is 0.5 or more; ours stays below).
 */
import type { Measurement } from '../messaging/measure.js';
import { FAILOVER_LEASE_MS, FAILOVER_RENEW_MS } from './cases.js';

/** What the bench uses of the fixture (loaded at run time: it lives outside the bench's sources). */
interface LeaderChaosFixture {
  readonly LEASE_MS: number;
  readonly RENEW_MS: number;
  runLeaderChaos(
    backendEnv: Record<string, string>,
    durationMs: number,
    random?: () => number,
  ): Promise<{
    readonly failovers: readonly { readonly action: 'kill' | 'stop'; readonly ms: number }[];
    readonly terms: number;
    readonly writes: number;
    readonly fencedWrites: number;
  }>;
}

const FIXTURE = new URL('../../../../packages/coordination/src/fixtures/leader-chaos.ts', import.meta.url);

let fixture: Promise<LeaderChaosFixture> | undefined;

async function loadFixture(): Promise<LeaderChaosFixture> {
  fixture ??= (import(FIXTURE.href) as Promise<LeaderChaosFixture>).then((loaded) => {
    if (loaded.LEASE_MS !== FAILOVER_LEASE_MS || loaded.RENEW_MS !== FAILOVER_RENEW_MS) {
      throw new Error(
        `the chaos fixture now uses lease ${loaded.LEASE_MS} ms and renewal ${loaded.RENEW_MS} ms: update ` +
          'FAILOVER_LEASE_MS and FAILOVER_RENEW_MS (and the README)',
      );
    }
    return loaded;
  });
  return fixture;
}

export interface FailoverBackend {
  readonly impl: string;
  readonly backend: 'sqlite' | 'postgres' | 'redis';
  readonly description: Record<string, unknown>;
  /** Kills leaders for about `durationMs`; one latency per kill (kill to the successor's election). */
  failovers(durationMs: number): Promise<Measurement>;
  afterEach(): Promise<void>;
}

/**
 * `env` tells the candidates their lease store (the fixture's BACKEND, TARGET, SCHEMA, PREFIX); `fresh` gives a
 * new one per measurement, so no lease of an earlier one is left.
 */
export function failoverBackend(
  impl: string,
  backend: FailoverBackend['backend'],
  storeText: string,
  fresh: () => Promise<Record<string, string>>,
): FailoverBackend {
  return {
    impl,
    backend,
    description: {
      store: storeText,
      candidates: `5 processes, LeaderElection with leaseMs ${FAILOVER_LEASE_MS} and renewEveryMs ${FAILOVER_RENEW_MS}`,
    },
    async failovers(durationMs) {
      const { runLeaderChaos } = await loadFixture();
      const env = await fresh();
      const start = performance.now();
      // Below 0.5 the fixture kills (never pauses); the pause after each failover is 500 ms + 0–735 ms, so the
      // kills fall at any point of the leader's renewal cycle.
      const result = await runLeaderChaos(env, durationMs, () => Math.random() * 0.49);
      const latencies = result.failovers.filter((f) => f.action === 'kill').map((f) => f.ms);
      if (latencies.length === 0) throw new Error(`no leader was killed within ${durationMs} ms`);
      return { jobs: latencies.length, ms: performance.now() - start, latencies, capped: false };
    },
    afterEach: async () => {},
  };
}
