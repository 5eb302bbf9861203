// Leader Election: of several instances of a service, one at a time does the work that must not run twice (a
// scheduler, a sweeper). Candidates contend for a lease; the holder renews it and leads while it does. Each term
// has a fencing token (it only grows) and an AbortSignal that fires the moment leadership is lost; a leader that
// stops releases the lease, so another candidate takes over at its next attempt, not when the lease runs out.
// Prints:
//   scheduler-a leads (token 1)
//   the store says: scheduler-a leads
//   scheduler-a stopped leading: stopped
//   scheduler-b leads (token 2)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaderElection, SqliteLeaseStore } from '@stratus/coordination';
import { openSqlite } from '@stratus/sql';

// Two candidates on one SQLite file, as two processes of one host would be (PostgreSQL or Redis across hosts).
const dir = mkdtempSync(join(tmpdir(), 'stratus-leader-'));
const database = openSqlite(join(dir, 'coordination.db'));
const candidate = (id: string) =>
  new LeaderElection({
    store: new SqliteLeaseStore({ database }),
    name: 'billing-scheduler',
    candidateId: id,
    leaseMs: 2_000, // a dead leader is replaced within this; renewed every leaseMs / 3
  });
const a = candidate('scheduler-a');
const b = candidate('scheduler-b');

for (const election of [a, b]) {
  election.onElected(async ({ token, signal }) => {
    console.log(`${election.candidateId} leads (token ${token})`);
    // The leader's work runs until the signal aborts (pass the token to fenced writes: see distributed-lock.ts).
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  });
  election.events.on((event) => {
    if (event.type === 'lost') console.log(`${election.candidateId} stopped leading: ${event.reason}`);
  });
}

a.start();
await a.waitForLeadership();
b.start(); // b campaigns too, and follows while a holds the lease
console.log(`the store says: ${(await b.leader())?.owner} leads`);

const bLeads = b.waitForLeadership();
await a.stop(); // releases the lease (on SIGTERM, say)
await bLeads;

await b.stop();
database.close();
rmSync(dir, { recursive: true, force: true });
