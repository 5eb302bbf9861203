/** The conference suite's scales, the verdict on a rate, and how `--only` picks deployments and rates. */
import { percentileOfSorted } from '../../stats.js';
import type { RateOutcome } from './load.js';

export type DeploymentName = 'embedded' | 'scaled';
export const deploymentNames: readonly DeploymentName[] = ['embedded', 'scaled'];

export interface ConferenceScale {
  /** Arrival rates swept in order (orders/s); a deployment's sweep stops at the first clearly unsustained one. */
  readonly rates: readonly number[];
  /** How long registrations arrive at each rate. */
  readonly durationMs: number;
  /** How long after the last arrival a rate waits for its registrations still running. */
  readonly drainMs: number;
  /** Unmeasured registrations before the sweep (JIT, connections, caches). */
  readonly warmup: { readonly rate: number; readonly durationMs: number };
  /** Idle time between two rates. */
  readonly pauseMs: number;
  readonly windowPollMs: number;
  readonly reserveWaitSeconds: number;
}

const polls = { windowPollMs: 20, reserveWaitSeconds: 10 };

export const fullScale: ConferenceScale = {
  rates: [25, 50, 100, 200, 300, 350, 400, 450, 500, 600, 800, 1000],
  durationMs: 20_000,
  drainMs: 10_000,
  warmup: { rate: 25, durationMs: 5_000 },
  pauseMs: 2_000,
  ...polls,
};

export const quickScale: ConferenceScale = {
  rates: [25, 50],
  durationMs: 3_000,
  drainMs: 5_000,
  warmup: { rate: 10, durationMs: 1_000 },
  pauseMs: 500,
  ...polls,
};

/** Registrations a deployment may see at most (warm-up included): each orders one seat of each type. */
export const registrationsOf = (scale: ConferenceScale, rates: readonly number[]) =>
  Math.round(
    (scale.warmup.rate * scale.warmup.durationMs +
      rates.reduce((sum, rate) => sum + rate * scale.durationMs, 0)) /
      1000,
  );

/** A rate is sustained when all three hold. */
export const SUSTAINED = {
  /** Completed (confirmed) orders/s at least this share of the arrival rate. */
  completedShare: 0.95,
  /** The window (placing → priced order visible) p99 at most this. */
  windowP99Ms: 1_000,
  /** Errors + unfinished registrations at most this share of those started. */
  failureShare: 0.01,
} as const;

/** A rate is clearly unsustained (the deployment's sweep stops there) when any of these holds. */
export const UNSUSTAINED = {
  completedShareBelow: 0.8,
  windowP99MsAbove: 5_000,
  failureShareAbove: 0.05,
} as const;

export type Verdict = 'sustained' | 'not sustained' | 'clearly unsustained';

export const windowP99 = (outcome: RateOutcome) =>
  outcome.windowMs.length === 0 ? Number.POSITIVE_INFINITY : percentileOfSorted(outcome.windowMs, 99);

export function verdictOf(outcome: RateOutcome): Verdict {
  const completedShare = outcome.completedPerSec / outcome.rate;
  const failureShare = (outcome.errors + outcome.unfinished) / outcome.started;
  const p99 = windowP99(outcome);
  if (
    completedShare < UNSUSTAINED.completedShareBelow ||
    p99 > UNSUSTAINED.windowP99MsAbove ||
    failureShare > UNSUSTAINED.failureShareAbove
  )
    return 'clearly unsustained';
  if (
    completedShare >= SUSTAINED.completedShare &&
    p99 <= SUSTAINED.windowP99Ms &&
    failureShare <= SUSTAINED.failureShare
  )
    return 'sustained';
  return 'not sustained';
}

export interface Selection {
  readonly deployments: readonly DeploymentName[];
  readonly rates: readonly number[];
}

/**
 * `--only` names deployments (`embedded`, `scaled`) and/or rates (`100`, `100/s`, or a case name such as
 * `window@100/s`); what it does not name is taken whole. Anything else is refused.
 */
export function select(only: readonly string[] | undefined, scale: ConferenceScale): Selection {
  const deployments: DeploymentName[] = [];
  const rates: number[] = [];
  for (const item of only ?? []) {
    if ((deploymentNames as readonly string[]).includes(item)) deployments.push(item as DeploymentName);
    else {
      const rate = /^(?:[a-z-]+@)?(\d+)(?:\/s)?$/.exec(item)?.[1];
      if (rate === undefined)
        throw new Error(
          `--only ${item}: expected a deployment (${deploymentNames.join(', ')}) or a rate (e.g. 100 or window@100/s)`,
        );
      rates.push(Number(rate));
    }
  }
  return {
    deployments: deployments.length > 0 ? deployments : deploymentNames,
    rates: rates.length > 0 ? rates.sort((a, b) => a - b) : scale.rates,
  };
}
