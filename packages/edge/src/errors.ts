import { StratusError } from '@stratus/core';

/** A gateway config was refused: `problems` lists every one found, each starting with its JSON path. */
export class GatewayConfigError extends StratusError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[], source?: string) {
    const where = source === undefined ? '' : ` in ${source}`;
    super(
      'ERR_STRATUS_GATEWAY_CONFIG',
      `Invalid gateway config${where}:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

/** An upstream sent no response headers within the route's timeout (the gateway answers 504). */
export class UpstreamTimeoutError extends StratusError {
  constructor(
    readonly upstream: string,
    readonly timeoutMs: number,
  ) {
    super('ERR_STRATUS_UPSTREAM_TIMEOUT', `Upstream "${upstream}" sent no response within ${timeoutMs} ms`);
  }
}
