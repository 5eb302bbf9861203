import type { StratusEvent } from '@stratus/core';

interface GatewayEventBase extends StratusEvent {
  readonly component: 'gateway';
}

/** A target left or rejoined its pool: passive ejection after failures, or active health checks. */
export interface TargetEvent extends GatewayEventBase {
  readonly type: 'target-ejected' | 'target-restored' | 'target-unhealthy' | 'target-healthy';
  readonly upstream: string;
  readonly target: string;
  /** For an ejection: how long it lasts. */
  readonly durationMs?: number;
}

/** A config was applied (at start or on reload) or refused; a refused one leaves the last good one running. */
export interface ConfigEvent extends GatewayEventBase {
  readonly type: 'config-applied' | 'config-rejected';
  readonly version: number;
  readonly source?: string;
  readonly problems?: readonly string[];
}

/** One request done: the access log's line, emitted only when someone listens. */
export interface RequestEvent extends GatewayEventBase {
  readonly type: 'request';
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly route?: string;
  readonly upstream?: string;
  readonly target?: string;
  readonly attempts: number;
  readonly durationMs: number;
  /** Why the gateway answered itself (no route, no target, upstream failure), if it did. */
  readonly error?: string;
}

/** A rate limit's shared store did not answer; the request went on or got 503, as the limit's onStoreFailure says. */
export interface LimitStoreEvent extends GatewayEventBase {
  readonly type: 'rate-limit-store-failed';
  readonly limit: string;
  readonly allowed: boolean;
}

export type GatewayEvent = TargetEvent | ConfigEvent | RequestEvent | LimitStoreEvent;
