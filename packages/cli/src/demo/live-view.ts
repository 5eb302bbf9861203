import type { CircuitState } from '@stratus/resilience';
import type { WindowReport } from './window-stats.js';

export interface Frame {
  readonly elapsedS: number;
  readonly durationS: number;
  readonly phase: string;
  readonly breaker: CircuitState;
  /** The client's rate limiter is past its soft limit (non-essential work would be shed). */
  readonly softLimited: boolean;
  readonly report: WindowReport;
  readonly totals: Readonly<Record<string, number>>;
  readonly totalRetries: number;
  readonly upstreamRequests: number;
  /** Most recent notable events, oldest first. */
  readonly log: readonly string[];
}

const colours = {
  reset: '\x1b[0m',
  bold: '\x1b[1m',
  dim: '\x1b[2m',
  red: '\x1b[31m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
};

function paint(text: string, colour: keyof typeof colours, useColour: boolean): string {
  return useColour ? `${colours[colour]}${text}${colours.reset}` : text;
}

const breakerColour: Record<CircuitState, keyof typeof colours> = {
  closed: 'green',
  'half-open': 'yellow',
  open: 'red',
  isolated: 'red',
};

const ms = (value: number | undefined) =>
  value === undefined ? '   -  ' : `${value.toFixed(1).padStart(6)}`;

function bar(fraction: number, width: number): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/** The live dashboard, as lines (a terminal redraws them in place). */
export function renderFrame(frame: Frame, useColour: boolean): string[] {
  const { report } = frame;
  const c = report.counts;
  const breaker = paint(frame.breaker.toUpperCase(), breakerColour[frame.breaker], useColour);
  return [
    `${paint('Stratus resilience demo', 'bold', useColour)}  ${bar(frame.elapsedS / frame.durationS, 30)} ${frame.elapsedS.toFixed(0)}/${frame.durationS}s`,
    `upstream phase: ${paint(frame.phase, 'bold', useColour)}   upstream requests: ${frame.upstreamRequests}`,
    `circuit breaker: ${breaker}   client rate limit: ${frame.softLimited ? paint('near the limit (soft limit on)', 'yellow', useColour) : 'ok'}`,
    `last second: ${report.callsPerSecond.toFixed(0).padStart(4)} calls/s  ok ${c.ok}  failed ${c.failed}  timeouts ${c.timeout}  fast-failed ${c['broken-circuit']}  throttled ${c.throttled}  retries ${report.retries}`,
    `latency of successful calls: p50 ${ms(report.p50Ms)} ms   p99 ${ms(report.p99Ms)} ms`,
    `totals: ok ${frame.totals.ok}  failed ${frame.totals.failed}  timeouts ${frame.totals.timeout}  fast-failed ${frame.totals['broken-circuit']}  throttled ${frame.totals.throttled}  retries ${frame.totalRetries}`,
    paint('recent events:', 'dim', useColour),
    ...frame.log.map((line) => `  ${line}`),
  ];
}

/** One line per report for logs and pipes, where redrawing makes no sense. */
export function renderLine(frame: Frame): string {
  const c = frame.report.counts;
  return [
    `t=${frame.elapsedS.toFixed(0).padStart(3)}s`,
    `phase=${frame.phase}`,
    `breaker=${frame.breaker}`,
    `soft-limit=${frame.softLimited ? 'on' : 'off'}`,
    `calls/s=${frame.report.callsPerSecond.toFixed(0)}`,
    `ok=${c.ok} failed=${c.failed} timeouts=${c.timeout} fast-failed=${c['broken-circuit']} throttled=${c.throttled}`,
    `retries=${frame.report.retries}`,
    `p50=${ms(frame.report.p50Ms).trim()}ms p99=${ms(frame.report.p99Ms).trim()}ms`,
  ].join(' ');
}
