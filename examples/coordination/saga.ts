// Compensating Transaction (an orchestrated saga): a business transaction over several services, each step with
// an action and an undo. The engine runs the steps in order and logs each completion before the next step; when a
// step fails for good, it undoes the completed steps in reverse. Every call carries an idempotency key that stays
// the same across retries and restarts, and `recover()` resumes sagas a crash interrupted.
// Prints:
//   trip-1: completed (reserve-seat, charge-card, send-ticket)
//   trip-2: compensated (reserve-seat, charge-card failed: card declined, undo reserve-seat)
//   trip-2 log: reserve-seat undone by undo
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineSaga, SagaEngine, SqliteSagaStore } from '@stratus/coordination';
import { openSqlite } from '@stratus/sql';

class CardDeclinedError extends Error {}
const calls: string[] = [];

const bookTrip = defineSaga<{ card: string }>({
  name: 'book-trip',
  steps: [
    {
      name: 'reserve-seat',
      // The idempotency key (`<sagaId>:reserve-seat`) lets the seat service act once however often it is called.
      do: ({ idempotencyKey }) => {
        calls.push('reserve-seat');
        return { seat: '12A', reservation: idempotencyKey };
      },
      undo: () => void calls.push('undo reserve-seat'),
    },
    {
      name: 'charge-card',
      do: ({ input }) => {
        if (input.card === 'declined') {
          calls.push('charge-card failed: card declined');
          throw new CardDeclinedError('card declined');
        }
        calls.push('charge-card');
        return { payment: 'p-1' };
      },
      undo: () => void calls.push('undo charge-card'),
      // Retried with backoff up to maxAttempts, except errors retrying cannot fix.
      retry: { maxAttempts: 3, retryable: (error) => !(error instanceof CardDeclinedError) },
    },
    { name: 'send-ticket', do: () => void calls.push('send-ticket') }, // nothing to undo
  ],
  compensation: 'reverse', // or 'parallel', or stages: [['charge-card'], ['reserve-seat']]
});

const dir = mkdtempSync(join(tmpdir(), 'stratus-saga-'));
const database = openSqlite(join(dir, 'sagas.db'));
const engine = new SagaEngine({ store: new SqliteSagaStore({ database }), definitions: [bookTrip] });
// After a restart: await engine.recover() resumes every running or compensating saga.

async function book(sagaId: string, card: string): Promise<void> {
  calls.length = 0;
  const record = await engine.start(bookTrip, sagaId, { card }); // resolves once the saga is over
  console.log(`${sagaId}: ${record.status} (${calls.join(', ')})`);
}
await book('trip-1', '4242');
await book('trip-2', 'declined');
const trip2 = await engine.get('trip-2');
for (const step of trip2!.steps) console.log(`trip-2 log: ${step.name} undone by ${step.undone?.by}`);
database.close();
rmSync(dir, { recursive: true, force: true });
