/**
 * The implementations of the messaging suite by name, each with the backend it runs on and, for peers, the Stratus
 * implementation its ratio is taken against (Stratus on the same backend). The crash worker builds its driver
 * from the same table.
 */
import { beeQueueDriver } from './bee-queue.js';
import { bullmqDriver } from './bullmq.js';
import type { BackendKind, Driver, DriverSpec } from './driver.js';
import { graphileWorkerDriver } from './graphile-worker.js';
import { pgBossDriver } from './pg-boss.js';
import { plainjobDriver } from './plainjob.js';
import { stratusDriver } from './stratus.js';

export interface Implementation {
  readonly backend: BackendKind;
  /** The Stratus row a peer is compared with; undefined for Stratus itself. */
  readonly versus?: string;
  create(spec: DriverSpec): Driver;
}

export const implementations: Record<string, Implementation> = {
  'stratus-sqlite': { backend: 'sqlite', create: (spec) => stratusDriver('sqlite', spec) },
  plainjob: { backend: 'sqlite', versus: 'stratus-sqlite', create: plainjobDriver },
  'stratus-postgres': { backend: 'postgres', create: (spec) => stratusDriver('postgres', spec) },
  'pg-boss': { backend: 'postgres', versus: 'stratus-postgres', create: pgBossDriver },
  'graphile-worker': { backend: 'postgres', versus: 'stratus-postgres', create: graphileWorkerDriver },
  'stratus-redis': { backend: 'redis', create: (spec) => stratusDriver('redis', spec) },
  // bee-queue's guarantees (no duplicate detection): a Stratus row of its own, read beside bee-queue's.
  'stratus-redis-nodedup': { backend: 'redis', create: (spec) => stratusDriver('redis', spec, false) },
  bullmq: { backend: 'redis', versus: 'stratus-redis', create: bullmqDriver },
  'bee-queue': { backend: 'redis', versus: 'stratus-redis', create: beeQueueDriver },
};

export function createDriver(spec: DriverSpec): Driver {
  const implementation = implementations[spec.impl];
  if (implementation === undefined) throw new Error(`unknown messaging implementation ${spec.impl}`);
  return implementation.create(spec);
}

/** The Stratus implementation a row is compared with (itself for Stratus rows). */
export function stratusCounterpart(impl: string): string | undefined {
  const implementation = implementations[impl];
  if (implementation === undefined) return undefined;
  return implementation.versus ?? impl;
}
