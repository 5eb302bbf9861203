import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, EventEmitter, InvalidOptionsError, type StratusEvent } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import pino from 'pino';
import { circuitBreaker } from '../circuit-breaker/index.js';
import { retry } from '../retry.js';
import { type LogStratusEventsOptions, logStratusEvents } from './pino.js';

interface LogLine {
  level: string;
  msg: string;
  stratus: Record<string, unknown> & { component: string; name: string; type: string; at: number };
}

/** A pino logger writing JSON lines into an array; the adapter logs every Stratus event of the process. */
function setup(options?: LogStratusEventsOptions, level = 'trace') {
  const lines: LogLine[] = [];
  const logger = pino(
    { level, formatters: { level: (label) => ({ level: label }) } },
    { write: (line: string) => lines.push(JSON.parse(line) as LogLine) },
  );
  const log = logStratusEvents(logger, options);
  return { lines, logger, log };
}

const summary = (lines: LogLine[]) => lines.map((l) => `${l.level} ${l.msg}`);

interface CustomEvent extends StratusEvent {
  readonly component: 'custom';
  readonly type: 'spotted';
  readonly response: object;
  readonly note: string;
}

describe('logStratusEvents (pino)', () => {
  it('logs a breaker opening as a warning with the event fields, without wiring the breaker', async () => {
    const { lines, log } = setup();
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      clock,
      name: 'payments',
      trip: { kind: 'consecutive-failures', failures: 1 },
    });
    await assert.rejects(breaker.execute(() => Promise.reject(new TypeError('card declined'))));
    await assert.rejects(breaker.execute(() => 'never runs'));
    log.dispose();
    assert.deepEqual(summary(lines).sort(), [
      'debug circuit-breaker "payments" failure',
      'debug circuit-breaker "payments" rejected',
      'warn circuit-breaker "payments" state-change',
    ]);
    const line = (type: string) => lines.find((l) => l.stratus.type === type)!.stratus;
    const change = line('state-change');
    assert.equal(change.at, clock.now());
    assert.equal(change.from, 'closed');
    assert.equal(change.to, 'open');
    assert.equal(change.reason, 'trip-rule');
    const failure = line('failure').failure as Record<string, unknown>;
    assert.equal(failure.type, 'TypeError');
    assert.equal(failure.message, 'card declined');
    assert.match(String(failure.stack), /TypeError: card declined/);
  });

  it('logs retries at info and giving up at error', async () => {
    const { lines, log } = setup();
    const clock = new VirtualClock();
    const policy = retry({
      clock,
      name: 'inventory',
      maxAttempts: 2,
      backoff: constantBackoff(50),
      handle: { error: () => true },
    });
    const failed = assert.rejects(policy.execute(() => Promise.reject(new Error('503'))));
    await clock.advance(50);
    await failed;
    log.dispose();
    assert.deepEqual(summary(lines), ['info retry "inventory" retry', 'error retry "inventory" give-up']);
    assert.equal(lines[0]!.stratus.delayMs, 50);
    assert.equal(lines[0]!.stratus.attempt, 1);
    assert.deepEqual(Object.keys(lines[0]!.stratus.cause as object), ['error']);
  });

  it('covers event types it does not know, rendering foreign objects by type and HTTP status', () => {
    const { lines, log } = setup();
    const events = new EventEmitter<CustomEvent>();
    class Response {
      status = 503;
      body = 'x'.repeat(10_000);
    }
    events.emit({
      component: 'custom',
      name: 'probe',
      type: 'spotted',
      at: 1,
      response: new Response(),
      note: 'hi',
    });
    log.dispose();
    assert.deepEqual(summary(lines), ['info custom "probe" spotted']);
    assert.deepEqual(lines[0]!.stratus, {
      component: 'custom',
      name: 'probe',
      type: 'spotted',
      at: 1,
      response: { type: 'Response', status: 503 },
      note: 'hi',
    });
  });

  it('takes levels by component.type, then type, or from a function, and skips silent and disabled levels', () => {
    const emit = (events: EventEmitter<StratusEvent>, component: string, type: string) =>
      events.emit({ component, name: 'n', type, at: 0 });
    const events = new EventEmitter<StratusEvent>();

    const byMap = setup({ levels: { 'bulkhead.rejected': 'warn', rejected: 'error', retry: 'silent' } });
    emit(events, 'bulkhead', 'rejected');
    emit(events, 'circuit-breaker', 'rejected');
    emit(events, 'retry', 'retry');
    byMap.log.dispose();
    assert.deepEqual(summary(byMap.lines), [
      'warn bulkhead "n" rejected',
      'error circuit-breaker "n" rejected',
    ]);

    const byFunction = setup({ levels: (event) => (event.component === 'retry' ? 'fatal' : undefined) });
    emit(events, 'retry', 'retry');
    emit(events, 'timeout', 'timeout');
    byFunction.log.dispose();
    assert.deepEqual(summary(byFunction.lines), ['fatal retry "n" retry', 'warn timeout "n" timeout']);

    const infoOnly = setup({}, 'info');
    emit(events, 'circuit-breaker', 'success');
    emit(events, 'retry', 'give-up');
    infoOnly.log.dispose();
    assert.deepEqual(summary(infoOnly.lines), ['error retry "n" give-up']);
  });

  it('puts the event under the configured key and stops at dispose', () => {
    const { lines, log } = setup({ key: 'resilience' });
    const events = new EventEmitter<StratusEvent>();
    events.emit({ component: 'c', name: 'n', type: 't', at: 0 });
    log.dispose();
    log.dispose();
    events.emit({ component: 'c', name: 'n', type: 't', at: 0 });
    assert.equal(lines.length, 1);
    assert.deepEqual((lines[0] as unknown as Record<string, unknown>).resilience, {
      component: 'c',
      name: 'n',
      type: 't',
      at: 0,
    });
  });

  it('rejects unknown levels and a missing logger', () => {
    const logger = pino({ enabled: false });
    assert.throws(() => logStratusEvents(logger, { levels: { retry: 'loud' as 'info' } }), {
      name: 'InvalidOptionsError',
      option: 'levels.retry',
    });
    assert.throws(() => logStratusEvents(logger, { levels: 3 as unknown as () => undefined }), {
      option: 'levels',
    });
    assert.throws(() => logStratusEvents(undefined as unknown as typeof logger), InvalidOptionsError);
  });
});
