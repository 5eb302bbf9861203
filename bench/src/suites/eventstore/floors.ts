/**
 * What the box itself allows, measured on the same servers as the run starts and ends, to read the targets
 * against: a PostgreSQL round trip, a durable one-row commit, a durable commit of 100 rows of the event's size, and
 * a one-row SQLite transaction (WAL, synchronous NORMAL). No event store is involved: these are the ceilings.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@stratus/sql';
import pg from 'pg';
import { BATCH } from './cases.js';
import { benchEvent } from './store.js';

const COUNT = 500;

async function rate(count: number, op: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 20; i++) await op(-1 - i);
  const start = performance.now();
  for (let i = 0; i < count; i++) await op(i);
  return Math.round((count / (performance.now() - start)) * 1000);
}

export interface Floors {
  readonly postgres?: {
    selectOnePerSec: number;
    insertOneRowCommitsPerSec: number;
    insert100RowsEventsPerSec: number;
  };
  readonly sqlite: { insertOneRowTransactionsPerSec: number };
}

/** `postgresUrl`: an empty database to use (and leave as it was), or undefined without PostgreSQL. */
export async function measureFloors(postgresUrl: string | undefined, sqliteDir: string): Promise<Floors> {
  const data = JSON.stringify(benchEvent(0).data);
  const path = join(sqliteDir, 'floor.db');
  const db = openSqlite(path, { synchronous: 'NORMAL' });
  let sqliteRate: number;
  try {
    db.exec('CREATE TABLE floor (id INTEGER PRIMARY KEY, stream TEXT NOT NULL, data TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO floor (stream, data) VALUES (?, ?)');
    sqliteRate = await rate(COUNT * 10, (i) => db.transaction(() => insert.run(`s${i}`, data)));
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  }
  if (postgresUrl === undefined) return { sqlite: { insertOneRowTransactionsPerSec: sqliteRate } };
  const client = new pg.Client({ connectionString: postgresUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(
      'CREATE TABLE floor (id bigserial PRIMARY KEY, stream text NOT NULL, data jsonb NOT NULL)',
    );
    const rows = Array.from({ length: BATCH }, (_, k) => `($1 || '-${k}', $2::jsonb)`).join(', ');
    const postgres = {
      selectOnePerSec: await rate(COUNT * 4, () => client.query({ name: 'floor_select', text: 'SELECT 1' })),
      insertOneRowCommitsPerSec: await rate(COUNT, (i) =>
        client.query({
          name: 'floor_insert',
          text: 'INSERT INTO floor (stream, data) VALUES ($1, $2::jsonb)',
          values: [`s${i}`, data],
        }),
      ),
      insert100RowsEventsPerSec:
        BATCH *
        (await rate(COUNT / 5, (i) =>
          client.query({
            name: 'floor_insert_batch',
            text: `INSERT INTO floor (stream, data) VALUES ${rows}`,
            values: [`b${i}`, data],
          }),
        )),
    };
    await client.query('DROP TABLE floor');
    return { postgres, sqlite: { insertOneRowTransactionsPerSec: sqliteRate } };
  } finally {
    await client.end();
  }
}
