// SQL pieces shared by the PostgreSQL message backend's migrations (schema.ts, session-hold-migration.ts).
import { MAX_PRIORITY } from '../backend.js';

/** Errors raised by the functions; the backend maps them to the typed errors. */
export const UNKNOWN_QUEUE_SQLSTATE = 'STQ01';
export const UNKNOWN_TOPIC_SQLSTATE = 'STT01';

/** The LISTEN/NOTIFY channel of a schema; the payload is the queue name. */
export function channelOf(schema: string): string {
  return `stratus_${schema}`;
}

/**
 * When a scheduled message falls due or a lock expires: time-based transitions wait in one index. `m` is a table
 * alias prefix ('m.') or '' (the index expression itself).
 */
export const due = (m: string) =>
  `(CASE WHEN ${m}state = 'scheduled' THEN ${m}available_at ELSE ${m}locked_until END)`;

/** SQL pieces shared by the migrations' functions. */
export function sqlParts(schema: string) {
  const S = `"${schema}"`;
  return {
    S,
    channel: `'${channelOf(schema)}'`,
    // Whether a due message dies instead of becoming available again; whether a slot's claimed one expired (TTL).
    dies: `(CASE WHEN m.state = 'scheduled' THEN coalesce(m.expires_at <= v_now, false)
    ELSE m.delivery_count >= q.max_delivery_count END)`,
    slotExpired: 'coalesce(m.expires_at <= p_nows[v_slot], false)',
    rank: (at: string, priority: string) => `${at} + (${MAX_PRIORITY} - ${priority}) * q.priority_step`,
    lookupQueue: (name: string) => `
    SELECT * INTO q FROM ${S}.queues WHERE name = ${name};
    IF NOT FOUND THEN
      RAISE EXCEPTION 'unknown queue %', ${name} USING ERRCODE = '${UNKNOWN_QUEUE_SQLSTATE}';
    END IF;`,
    // One advisory lock per (queue, session), taken in key order so that transactions taking several never deadlock.
    // The session key (into v_key) of the message the delivery p_sequence, p_token still holds, its row locked;
    // the function returns false when the delivery holds nothing any more.
    lockDelivery: `
  SELECT m.session_key INTO v_key FROM ${S}.messages m
  WHERE m.queue_id = q.id AND m.sequence = p_sequence AND m.lock_token = p_token
  FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;`,
    lockSessions: (keys: string) => `
    PERFORM pg_advisory_xact_lock(q.id, l.k)
    FROM (SELECT DISTINCT hashtext(s) AS k FROM unnest(${keys}) AS s WHERE s IS NOT NULL ORDER BY 1) AS l;`,
    // The functions called by the backend never scan a whole table: a plan cached while the tables were small (a
    // fresh install) would otherwise keep sequentially scanning them after they grew, until the next ANALYZE.
    // Every statement has an index that serves it; this keeps the planner on them whatever the statistics, so
    // their statements can be planned once per connection (generic plans, genericPlansMigration): PL/pgSQL's
    // default planned some of them again on every call (a one-message receive in a transaction: 0.63-0.76 ms
    // that way, 0.35-0.61 ms with generic plans).
    entryPoint: 'LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$',
  };
}
