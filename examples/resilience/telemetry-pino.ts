// Telemetry to pino: logStratusEvents logs every Stratus event of the process (read from the `stratus:events`
// diagnostics channel, so no policy needs wiring) as one structured line, at a level chosen per event type.
// Prints:
//   info retry "payments" retry {"attempt":1,"delayMs":10,"reason":"backoff"}
//   warn circuit-breaker "payments" state-change {"from":"closed","to":"open","reason":"trip-rule"}
//   error retry "payments" give-up {"attempts":2,"reason":"max-attempts"}
import { Writable } from 'node:stream';
import { constantBackoff } from '@stratus/core';
import { circuitBreaker, logStratusEvents, pipeline, retry } from '@stratus/resilience';
import { pino } from 'pino';

// pino writes JSON lines; this destination prints a digest of each so the output stays readable here.
const digest = new Writable({
  write(chunk, _encoding, done) {
    const line = JSON.parse(String(chunk));
    const { attempt, delayMs, attempts, from, to, reason } = line.stratus;
    const fields = JSON.stringify({ attempt, delayMs, attempts, from, to, reason });
    console.log(`${line.level} ${line.msg} ${fields}`);
    done();
  },
});
const logger = pino({ formatters: { level: (label) => ({ level: label }) } }, digest);

// Default levels: retry info, give-up error, a breaker opening warn, per-call events (rejected, success) debug.
const log = logStratusEvents(logger, { levels: { 'circuit-breaker.failure': 'silent' } });

const payments = pipeline(
  retry({ name: 'payments', maxAttempts: 2, backoff: constantBackoff(10) }),
  circuitBreaker({ name: 'payments', trip: { kind: 'consecutive-failures', failures: 2 } }),
);
const unavailable = () => Object.assign(new Error('Service Unavailable'), { status: 503 });
await payments.execute(() => Promise.reject(unavailable())).catch(() => {});
log.dispose();
