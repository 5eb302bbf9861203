// Bulkhead: at most `maxConcurrent` calls run at once and `maxQueued` more wait their turn; the rest are refused at
// once, so one slow dependency cannot take every connection. Partitions give each tenant a compartment of its own.
// Prints:
//   running 2, queued 1, free slots 0
//   call 4 refused: ERR_STRATUS_BULKHEAD_REJECTED (full)
//   all 3 admitted calls finished
//   tenant "big" refused: full
//   tenant "small" still runs: done
import { sleep, systemClock } from '@stratus/core';
import { BulkheadRejectedError, bulkhead } from '@stratus/resilience';

const reports = bulkhead({ maxConcurrent: 2, maxQueued: 1, queueTimeoutMs: 5_000 });
const slowQuery = () => sleep(systemClock, 20);

const admitted = [reports.execute(slowQuery), reports.execute(slowQuery), reports.execute(slowQuery)];
console.log(`running ${reports.active}, queued ${reports.queued}, free slots ${reports.executionSlots}`);
await reports.execute(slowQuery).catch((error) => {
  if (error instanceof BulkheadRejectedError) console.log(`call 4 refused: ${error.code} (${error.reason})`);
});
await Promise.all(admitted);
console.log(`all ${admitted.length} admitted calls finished`);

// One compartment per tenant: a noisy tenant fills only its own.
const perTenant = bulkhead({ maxConcurrent: 1, partitions: { big: { maxConcurrent: 1 } } });
const busy = perTenant.execute(slowQuery, { partition: 'big' });
await perTenant.execute(slowQuery, { partition: 'big' }).catch((error: BulkheadRejectedError) => {
  console.log(`tenant "big" refused: ${error.reason}`);
});
const small = await perTenant.partition('small').execute(async () => 'done');
console.log(`tenant "small" still runs: ${small}`);
await busy;
