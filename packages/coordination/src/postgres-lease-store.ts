import { PostgresComponent, type PostgresComponentOptions, postgresTypes } from '@stratus/sql';
import type { Pool } from 'pg';
import {
  type AcquireRequest,
  type AcquireResult,
  checkAcquireRequest,
  checkHeldLease,
  type LeaseGrant,
  type LeaseHolder,
  type LeaseStore,
} from './lease-store.js';

export type PostgresLeaseStoreOptions = PostgresComponentOptions;

// The token row is locked first (the upsert takes its row lock until commit), which serialises acquisitions of
// one name without blocking any other name; everything then happens in one call, one round trip.
const migrations = (s: string) => [
  `CREATE TABLE "${s}".coord_lease_holders (
     name text NOT NULL,
     owner text NOT NULL,
     token bigint NOT NULL,
     expires_at double precision NOT NULL,
     PRIMARY KEY (name, owner)
   );
   CREATE TABLE "${s}".coord_lease_tokens (name text PRIMARY KEY, token bigint NOT NULL);
   CREATE FUNCTION "${s}".coord_acquire(p_name text, p_owner text, p_expires double precision,
                                        p_now double precision, p_limit int)
   RETURNS TABLE (o_acquired boolean, o_renewed boolean, o_owner text, o_token bigint, o_expires double precision)
   LANGUAGE plpgsql AS $$
   DECLARE
     v_token bigint;
   BEGIN
     INSERT INTO "${s}".coord_lease_tokens AS t (name, token) VALUES (p_name, 0)
       ON CONFLICT (name) DO UPDATE SET token = t.token;
     DELETE FROM "${s}".coord_lease_holders h WHERE h.name = p_name AND h.expires_at <= p_now;
     UPDATE "${s}".coord_lease_holders h SET expires_at = p_expires
       WHERE h.name = p_name AND h.owner = p_owner RETURNING h.token INTO v_token;
     IF FOUND THEN
       RETURN QUERY SELECT true, true, p_owner, v_token, p_expires;
       RETURN;
     END IF;
     IF (SELECT count(*) FROM "${s}".coord_lease_holders h WHERE h.name = p_name) >= p_limit THEN
       RETURN QUERY SELECT false, false, h.owner, h.token, h.expires_at FROM "${s}".coord_lease_holders h
         WHERE h.name = p_name ORDER BY h.expires_at, h.token;
       RETURN;
     END IF;
     UPDATE "${s}".coord_lease_tokens t SET token = t.token + 1 WHERE t.name = p_name RETURNING t.token INTO v_token;
     INSERT INTO "${s}".coord_lease_holders (name, owner, token, expires_at) VALUES (p_name, p_owner, v_token, p_expires);
     RETURN QUERY SELECT true, false, p_owner, v_token, p_expires;
   END $$;`,
];

interface AcquireRow {
  o_acquired: boolean;
  o_renewed: boolean;
  o_owner: string;
  o_token: string;
  o_expires: number;
}

/** Leases in PostgreSQL, for processes on many hosts: one function call per acquisition. */
export class PostgresLeaseStore implements LeaseStore {
  readonly kind = 'postgres';
  readonly pool: Pool;
  readonly schema: string;
  readonly #component: PostgresComponent;

  constructor(options: PostgresLeaseStoreOptions) {
    this.#component = new PostgresComponent('coordination', options, migrations);
    this.pool = this.#component.pool;
    this.schema = this.#component.schema;
  }

  /** Creates the tables and function if needed (done on first use). */
  migrate(): Promise<void> {
    return this.#component.migrate();
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const limit = checkAcquireRequest(request);
    const { name, owner, ttlMs, now } = request;
    await this.migrate();
    let rows: AcquireRow[] = [];
    // The function counts the holders, then lists them; releases do not wait for the token row lock, so every
    // holder it counted may be gone by then, and it returns no row: the lease was just freed, so ask again.
    for (let attempt = 0; rows.length === 0 && attempt < 3; attempt++) {
      ({ rows } = await this.pool.query<AcquireRow>({
        text: `SELECT * FROM "${this.schema}".coord_acquire($1, $2, $3, $4, $5)`,
        values: [name, owner, now + ttlMs, now, limit],
        types: postgresTypes,
      }));
    }
    const first = rows[0];
    if (first === undefined) return { acquired: false, holders: [] };
    if (first.o_acquired) {
      return {
        acquired: true,
        renewed: first.o_renewed,
        grant: { name, owner, token: Number(first.o_token), expiresAt: first.o_expires },
      };
    }
    return {
      acquired: false,
      holders: rows.map((row) => ({
        owner: row.o_owner,
        token: Number(row.o_token),
        expiresAt: row.o_expires,
      })),
    };
  }

  async renew(
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | undefined> {
    checkHeldLease(name, owner, token, ttlMs, now);
    await this.migrate();
    const expiresAt = now + ttlMs;
    const { rowCount } = await this.pool.query(
      `UPDATE "${this.schema}".coord_lease_holders SET expires_at = $5
       WHERE name = $1 AND owner = $2 AND token = $3 AND expires_at > $4`,
      [name, owner, token, now, expiresAt],
    );
    return rowCount === 1 ? { name, owner, token, expiresAt } : undefined;
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    checkHeldLease(name, owner, token);
    await this.migrate();
    const { rowCount } = await this.pool.query(
      `DELETE FROM "${this.schema}".coord_lease_holders WHERE name = $1 AND owner = $2 AND token = $3`,
      [name, owner, token],
    );
    return rowCount === 1;
  }

  async holders(name: string, now: number): Promise<LeaseHolder[]> {
    await this.migrate();
    const { rows } = await this.pool.query<{ owner: string; token: string; expires_at: number }>({
      text: `SELECT owner, token, expires_at FROM "${this.schema}".coord_lease_holders
       WHERE name = $1 AND expires_at > $2 ORDER BY expires_at, token`,
      values: [name, now],
      types: postgresTypes,
    });
    return rows.map((row) => ({ owner: row.owner, token: Number(row.token), expiresAt: row.expires_at }));
  }
}
