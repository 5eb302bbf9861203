/**
 * Runs fuzz targets against an app: fast-check sends each target's requests (a seed and a number of runs per
 * target; the targets run side by side, so a request that waits holds up only its own target), and an answer of
 * 500 or more, or a send that throws, fails the target: fast-check then shrinks the request that did it (a bounded
 * number of steps). Unhandled rejections and uncaught exceptions during the run are caught and reported too.
 */
import fc from 'fast-check';
import { describeRequest, type FuzzRequest } from './fuzz-request.js';

export interface FuzzTarget {
  readonly name: string;
  readonly requests: fc.Arbitrary<FuzzRequest>;
}

export interface FuzzAnswer {
  readonly statusCode: number;
  readonly body: string;
}

export type Send = (request: FuzzRequest) => Promise<FuzzAnswer>;

export interface FuzzOptions {
  /** Target i runs on seed + i. */
  readonly seed: number;
  /** Requests per target, before shrinking. */
  readonly runs: number;
  /** Shrinking steps at most per failure (default 200). */
  readonly maxShrinks?: number;
}

export interface FuzzFailure {
  readonly target: string;
  /** The smallest request found that fails (describeRequest). */
  readonly request: string;
  /** Its status and the start of its body, or what the send threw. */
  readonly answer: string;
  /** To replay: fast-check's seed and path for this target. */
  readonly seed: number;
  readonly path: string | undefined;
}

export interface FuzzReport {
  /** Requests sent, shrinking included. */
  readonly requests: number;
  /** How many answers had each status, over all targets and by target. */
  readonly statuses: Readonly<Record<number, number>>;
  readonly statusesByTarget: Readonly<Record<string, Readonly<Record<number, number>>>>;
  readonly failures: readonly FuzzFailure[];
  /** Unhandled rejections and uncaught exceptions while it ran. */
  readonly crashes: readonly string[];
  readonly durationMs: number;
}

const describeError = (error: unknown) =>
  error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);

export async function runFuzz(
  send: Send,
  targets: readonly FuzzTarget[],
  options: FuzzOptions,
): Promise<FuzzReport> {
  const crashes: string[] = [];
  const onRejection = (reason: unknown) => crashes.push(`unhandled rejection: ${describeError(reason)}`);
  const onException = (error: unknown) => crashes.push(`uncaught exception: ${describeError(error)}`);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  const statuses: Record<number, number> = {};
  const statusesByTarget: Record<string, Record<number, number>> = {};
  let requests = 0;
  const started = performance.now();

  async function fuzzTarget(target: FuzzTarget, index: number): Promise<FuzzFailure | undefined> {
    let lastFailure: { request: FuzzRequest; answer: string } | undefined;
    const own: Record<number, number> = {};
    statusesByTarget[target.name] = own;
    const requestsOf = fc.limitShrink(target.requests, options.maxShrinks ?? 200);
    const property = fc.asyncProperty(requestsOf, async (request) => {
      requests++;
      let answer: string;
      try {
        const response = await send(request);
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
        own[response.statusCode] = (own[response.statusCode] ?? 0) + 1;
        if (response.statusCode < 500) return true;
        answer = `${response.statusCode} ${response.body.slice(0, 500)}`;
      } catch (error) {
        answer = `the send threw ${describeError(error)}`;
      }
      lastFailure = { request, answer };
      return false;
    });
    const details = await fc.check(property, { seed: options.seed + index, numRuns: options.runs });
    if (!details.failed) return undefined;
    // The last request that failed is the one shrinking ended on.
    return {
      target: target.name,
      request:
        lastFailure === undefined ? String(details.counterexample) : describeRequest(lastFailure.request),
      answer: lastFailure?.answer ?? String(details.errorInstance),
      seed: details.seed,
      path: details.counterexamplePath ?? undefined,
    };
  }

  try {
    const failures = await Promise.all(targets.map(fuzzTarget));
    return {
      requests,
      statuses,
      statusesByTarget,
      failures: failures.filter((failure): failure is FuzzFailure => failure !== undefined),
      crashes,
      durationMs: performance.now() - started,
    };
  } finally {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  }
}
