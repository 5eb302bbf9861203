import { advisoryKey } from '@stratus/sql';
import { DEAD_LETTER_EXPIRED, DEAD_LETTER_MAX_DELIVERIES } from '../backend.js';
import { genericPlansMigration } from './generic-plans-migration.js';
import {
  advanceSessionsFunction,
  enqueueFunction,
  listMessagesFunction,
  unlockMessageFunction,
} from './session-functions.js';
import { sessionHoldMigration } from './session-hold-migration.js';
import { due, sqlParts, UNKNOWN_TOPIC_SQLSTATE } from './sql-parts.js';

/**
 * The PostgreSQL schema of the message backend: tables, indexes and the plpgsql functions that make every
 * operation one round trip. Everything lives in one schema (default `stratus`), so several independent
 * installations can share a database.
 *
 * Migrations are append-only: a released entry is never edited; a change is a new entry. `migrate` in
 * postgres-backend.ts applies the missing ones under an advisory lock.
 *
 * Notes on concurrency (READ COMMITTED):
 * - Receivers pick with FOR UPDATE SKIP LOCKED in (rank, sequence) order, so competing receivers never wait on
 *   each other and never take the same message.
 * - Session gating: every statement that decides whether a session message is the head (send, resend) or that
 *   promotes the next one (complete, dead-letter) first takes a transaction advisory lock per (queue, session) in
 *   a separate statement. plpgsql takes a fresh snapshot per statement, so the decision sees everything committed
 *   before the lock was granted and nothing can slip in until commit: a session never has two heads, and a
 *   message sent while its head completes is either promoted by the completion or sees the head gone.
 * - publish takes a shared advisory lock and subscribe an exclusive one, so a subscription's replay of retained
 *   messages and concurrent publishes neither miss nor double a message.
 * - NOTIFY is sent from inside the functions, so it goes out exactly when the transaction commits.
 */

/** What every receiving function returns: a row per message locked, tagged with its caller's slot. */
const RECEIVED_ROWS = `RETURNS TABLE (slot int, sequence bigint, id text, body bytea, props json, priority smallint, enqueued_at float8,
  available_at float8, expires_at float8, delivery_count int, lock_token uuid, locked_until float8,
  next_due_at float8)`;

/**
 * The receive function (see its comment). With `batches`, on a sessions queue it also locks up to p_batches - 1 of a
 * session's due waiting messages behind each head it locks (ReceiveRequest.sessionBatch), and a session message whose
 * lock expired goes through unlock_message, so the messages locked behind it go back to waiting.
 */
function receiveFunction(schema: string, batches: boolean): string {
  const { S, dies, slotExpired, rank, lookupQueue, lockSessions, entryPoint } = sqlParts(schema);
  // Expired locks of session messages, in sequence order: a head's lock expires with (or before) those behind it.
  const expiredSessionLocks = `
  IF q.sessions THEN
    expired := ARRAY(
      SELECT x.sequence FROM ${S}.messages x
      WHERE x.queue_id = q.id AND x.state = 'locked' AND x.session_key IS NOT NULL AND ${due('x.')} <= v_now
      ORDER BY x.sequence LIMIT 5000
      FOR UPDATE SKIP LOCKED);
    FOR f IN SELECT m.sequence, m.session_key, m.locked_until FROM unnest(expired) WITH ORDINALITY AS e(sequence, ord)
      JOIN ${S}.messages m ON m.sequence = e.sequence ORDER BY e.ord LOOP
      -- An earlier message of its session may have sent it back to waiting in this pass.
      CONTINUE WHEN NOT EXISTS (SELECT 1 FROM ${S}.messages m WHERE m.sequence = f.sequence AND m.state = 'locked');
      PERFORM ${S}.unlock_message(q, f.sequence, f.session_key, f.locked_until, v_now);
    END LOOP;
  END IF;`;
  // Each session head of the round takes the due waiting messages right behind it, in order, under the session lock.
  const lockFollowers = `
      round_all := round_locked;
      IF q.sessions AND p_batches[v_slot] > 1 THEN
        ${lockSessions('round_keys')}
        round_all := '{}';
        FOR v_i IN 1 .. cardinality(round_locked) LOOP
          round_all := round_all || round_locked[v_i];
          CONTINUE WHEN round_keys[v_i] IS NULL;
          FOR f IN SELECT w.sequence, w.available_at, w.expires_at FROM ${S}.messages w
            WHERE w.queue_id = q.id AND w.session_key = round_keys[v_i] AND w.state = 'waiting'
            ORDER BY w.sequence LIMIT p_batches[v_slot] - 1 LOOP
            EXIT WHEN f.available_at > p_nows[v_slot] OR coalesce(f.expires_at <= p_nows[v_slot], false);
            UPDATE ${S}.messages m SET state = 'locked', delivery_count = m.delivery_count + 1,
              lock_token = gen_random_uuid(), locked_until = p_nows[v_slot] + p_lock_ms[v_slot]
            WHERE m.sequence = f.sequence;
            round_all := round_all || f.sequence;
          END LOOP;
        END LOOP;
      END IF;`;
  return `-- Receives for several callers (slots) in one transaction (group commit); p_maxes, p_lock_ms and p_nows give
-- each caller's request and rows carry the slot they belong to. The slots share one pass over the queue: due
-- messages are released as of the latest now among them, then one claim of all the messages wanted is dealt out
-- in slot order, each slot locking its share with its own now and lock duration, as if the slots had received
-- one after the other. Expired (TTL) messages are dead-lettered on the way; when they used up the claim, the
-- slots still short are served from a fresh one.
CREATE FUNCTION ${S}.receive(p_queue text, p_maxes int[], p_lock_ms float8[], p_nows float8[]${
    batches ? ', p_batches int[]' : ''
  })
${RECEIVED_ROWS}
${entryPoint}
#variable_conflict use_column
DECLARE
  q ${S}.queues;
  v_now float8 := (SELECT max(n) FROM unnest(p_nows) AS n);
  needs int[] := p_maxes;
  claimed bigint[];
  share bigint[];
  dealt int;
  v_slot int;
  died boolean;
  rounds int := 0;
  locked_sequences bigint[] := '{}';
  locked_slots int[] := '{}';
  round_locked bigint[];
  round_dead bigint;
  ended text[];
  v_next_due float8;${
    batches
      ? `
  round_keys text[];
  round_all bigint[];
  v_i int;
  f record;
  expired bigint[];`
      : ''
  }
BEGIN
  ${lookupQueue('p_queue')}
  -- (1) due scheduled messages become available (or die, expired); (2) expired locks come back (or die).
  WITH moved AS (
    UPDATE ${S}.messages m SET
      state = CASE WHEN ${dies} THEN 'dead' ELSE 'available' END,
      available_at = CASE WHEN m.state = 'locked' AND NOT ${dies} THEN m.locked_until ELSE m.available_at END,
      rank = CASE WHEN ${dies} THEN m.rank
                  ELSE ${rank("CASE WHEN m.state = 'locked' THEN m.locked_until ELSE m.available_at END", 'm.priority')} END,
      lock_token = NULL,
      locked_until = NULL,
      dead_reason = CASE WHEN NOT ${dies} THEN NULL WHEN m.state = 'scheduled' THEN '${DEAD_LETTER_EXPIRED}'
                         ELSE '${DEAD_LETTER_MAX_DELIVERIES}' END,
      dead_at = CASE WHEN ${dies} THEN v_now END
    WHERE m.queue_id = q.id AND m.sequence = ANY (ARRAY(
      SELECT x.sequence FROM ${S}.messages x
      WHERE x.queue_id = q.id AND x.state IN ('scheduled', 'locked') AND ${due('x.')} <= v_now${
        batches ? "\n        AND NOT (x.state = 'locked' AND x.session_key IS NOT NULL)" : ''
      }
      ORDER BY ${due('x.')} LIMIT 5000
      FOR UPDATE SKIP LOCKED))
    RETURNING m.state, m.session_key
  )
  SELECT array_agg(DISTINCT mv.session_key) FILTER (WHERE mv.state = 'dead' AND mv.session_key IS NOT NULL)
    INTO ended FROM moved mv;
  IF ended IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ended, v_now);
  END IF;${batches ? expiredSessionLocks : ''}

  -- (3) claim in (rank, sequence) order, skipping what others hold, and deal out.
  LOOP
    rounds := rounds + 1;
    claimed := ARRAY(
      SELECT x.sequence FROM ${S}.messages x
      WHERE x.queue_id = q.id AND x.state = 'available'
      ORDER BY x.rank, x.sequence
      LIMIT (SELECT sum(n) FROM unnest(needs) AS n)
      FOR UPDATE SKIP LOCKED);
    EXIT WHEN cardinality(claimed) = 0;
    dealt := 0;
    died := false;
    v_slot := 1;
    WHILE v_slot <= cardinality(needs) AND dealt < cardinality(claimed) LOOP
      IF needs[v_slot] = 0 THEN
        v_slot := v_slot + 1;
        CONTINUE;
      END IF;
      share := claimed[dealt + 1 : dealt + needs[v_slot]];
      dealt := dealt + cardinality(share);
      -- (4) lock each, or dead-letter it when it expired.
      WITH taken AS (
        UPDATE ${S}.messages m SET
          state = CASE WHEN ${slotExpired} THEN 'dead' ELSE 'locked' END,
          delivery_count = m.delivery_count + CASE WHEN ${slotExpired} THEN 0 ELSE 1 END,
          lock_token = CASE WHEN ${slotExpired} THEN NULL ELSE gen_random_uuid() END,
          locked_until = CASE WHEN ${slotExpired} THEN NULL ELSE p_nows[v_slot] + p_lock_ms[v_slot] END,
          dead_reason = CASE WHEN ${slotExpired} THEN '${DEAD_LETTER_EXPIRED}' END,
          dead_at = CASE WHEN ${slotExpired} THEN p_nows[v_slot] END
        WHERE m.queue_id = q.id AND m.sequence = ANY (share)
        RETURNING m.sequence, m.rank, ${slotExpired} AS expired, m.session_key
      )
      SELECT coalesce(array_agg(t.sequence ORDER BY t.rank, t.sequence) FILTER (WHERE NOT t.expired), '{}'),
        count(*) FILTER (WHERE t.expired),
        array_agg(DISTINCT t.session_key) FILTER (WHERE t.expired AND t.session_key IS NOT NULL)${
          batches
            ? ",\n        coalesce(array_agg(t.session_key ORDER BY t.rank, t.sequence) FILTER (WHERE NOT t.expired), '{}')"
            : ''
        }
        INTO round_locked, round_dead, ended${batches ? ', round_keys' : ''}
      FROM taken t;${batches ? lockFollowers : ''}
      locked_sequences := locked_sequences || ${batches ? 'round_all' : 'round_locked'};
      locked_slots := locked_slots || array_fill(v_slot, ARRAY[cardinality(${batches ? 'round_all' : 'round_locked'})]);
      needs[v_slot] := needs[v_slot] - cardinality(round_locked);
      IF ended IS NOT NULL THEN
        PERFORM ${S}.advance_sessions(q, ended, p_nows[v_slot]);
      END IF;
      died := died OR round_dead > 0;
      -- A slot whose share had expired messages takes the next claimed ones before the following slot.
      IF needs[v_slot] = 0 THEN
        v_slot := v_slot + 1;
      END IF;
    END LOOP;
    EXIT WHEN NOT died OR rounds >= 100;
  END LOOP;

  RETURN QUERY
  SELECT l.slot, m.sequence, b.id, b.body, b.props, m.priority, m.enqueued_at, m.available_at, m.expires_at,
    m.delivery_count, m.lock_token, m.locked_until, NULL::float8
  FROM unnest(locked_sequences, locked_slots) WITH ORDINALITY AS l(sequence, slot, ord)
  JOIN ${S}.messages m ON m.sequence = l.sequence
  JOIN ${S}.payloads b ON b.sequence = l.sequence
  WHERE m.queue_id = q.id AND m.sequence = ANY (locked_sequences)
    AND b.sequence = ANY (locked_sequences)
  ORDER BY l.ord;
  -- Slots that got nothing: one row each carrying only when to look again (none when nothing is pending).
  IF ${
    batches
      ? 'EXISTS (SELECT 1 FROM generate_subscripts(p_maxes, 1) AS e(slot) WHERE NOT e.slot = ANY (locked_slots))'
      : 'cardinality(locked_sequences) < (SELECT sum(n) FROM unnest(p_maxes) AS n)'
  } THEN
    SELECT ${due('')} INTO v_next_due FROM ${S}.messages
    WHERE queue_id = q.id AND state IN ('scheduled', 'locked') ORDER BY ${due('')} LIMIT 1;
    IF v_next_due IS NOT NULL THEN
      RETURN QUERY
      SELECT e.slot::int, NULL::bigint, NULL::text, NULL::bytea, NULL::json, NULL::smallint, NULL::float8,
        NULL::float8, NULL::float8, NULL::int, NULL::uuid, NULL::float8, v_next_due
      FROM generate_subscripts(p_maxes, 1) AS e(slot)
      WHERE NOT e.slot = ANY (locked_slots);
    END IF;
  END IF;
END
$$;

`;
}

function firstMigration(schema: string): string {
  const { S, channel, rank, lookupQueue, lockSessions, entryPoint } = sqlParts(schema);
  // Shared by publish, exclusive for subscribe: a constant key per schema in the single-bigint lock space.
  const topicLock = advisoryKey(`topics:${schema}`);

  return `
CREATE SEQUENCE ${S}.message_sequence;

CREATE TABLE ${S}.queues (
  id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  lock_duration_ms float8 NOT NULL,
  max_delivery_count float8 NOT NULL,
  duplicate_window_ms float8 NOT NULL,
  default_ttl_ms float8,
  max_message_bytes float8 NOT NULL,
  priority_policy text NOT NULL,
  aging_ms float8,
  -- What one priority step is worth in rank (rankOf in backend.ts).
  priority_step float8 NOT NULL,
  sessions boolean NOT NULL
);

-- A message's delivery state: a small row rewritten on every transition. Times are epoch milliseconds from the
-- caller's clock, as float8 like JavaScript numbers.
CREATE TABLE ${S}.messages (
  queue_id int NOT NULL,
  sequence bigint NOT NULL,
  state text NOT NULL,
  rank float8 NOT NULL,
  available_at float8 NOT NULL,
  locked_until float8,
  lock_token uuid,
  delivery_count int NOT NULL DEFAULT 0,
  priority smallint NOT NULL,
  -- The session id when the queue orders sessions (gating key); the sessionId property itself is in props.
  session_key text,
  enqueued_at float8 NOT NULL,
  expires_at float8,
  dead_at float8,
  dead_reason text,
  dead_description text,
  -- Keyed by sequence alone (unique across queues): lookups of known messages then have no index to choose but
  -- this one, whatever the statistics say (a fresh table's generic plans would otherwise scan the whole queue).
  PRIMARY KEY (sequence),
  CONSTRAINT messages_locked_token CHECK ((state = 'locked') = (lock_token IS NOT NULL))
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01,
        autovacuum_vacuum_cost_delay = 0);

-- What was sent, written once: kept apart so that state transitions do not copy the body.
CREATE TABLE ${S}.payloads (
  sequence bigint PRIMARY KEY,
  id text NOT NULL,
  props json,
  body bytea NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02);

-- receive: the available messages in delivery order.
CREATE INDEX messages_available ON ${S}.messages (queue_id, rank, sequence) WHERE state = 'available';
-- receive: scheduled messages falling due and locks expiring; nextDueAt.
CREATE INDEX messages_due ON ${S}.messages (queue_id, ${due('')}) WHERE state IN ('scheduled', 'locked');
-- session gating and promotion.
CREATE INDEX messages_session ON ${S}.messages (queue_id, session_key, sequence)
  WHERE session_key IS NOT NULL AND state <> 'dead';
-- peek and stats: what is not dead, in sequence order.
CREATE INDEX messages_live ON ${S}.messages (queue_id, sequence) WHERE state <> 'dead';
-- dead-letter listing, resend and purge.
CREATE INDEX messages_dead ON ${S}.messages (queue_id, sequence) WHERE state = 'dead';

-- Message ids seen within each queue's duplicate window.
CREATE TABLE ${S}.dedup (
  queue_id int NOT NULL,
  id text NOT NULL,
  seen_at float8 NOT NULL,
  expires_at float8 NOT NULL,
  PRIMARY KEY (queue_id, id)
) WITH (autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX dedup_expires ON ${S}.dedup (expires_at);

CREATE TABLE ${S}.sessions (
  queue_id int NOT NULL,
  session_id text NOT NULL,
  state bytea NOT NULL,
  PRIMARY KEY (queue_id, session_id)
);

CREATE TABLE ${S}.topics (
  id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  retention_ms float8 NOT NULL
);

-- Published messages kept for replay into new subscriptions, as they were published.
CREATE TABLE ${S}.retained (
  topic_id int NOT NULL,
  sequence bigint GENERATED ALWAYS AS IDENTITY,
  published_at float8 NOT NULL,
  id text NOT NULL,
  props json,
  priority smallint,
  session_id text,
  available_at float8,
  expires_at float8,
  body bytea NOT NULL,
  PRIMARY KEY (topic_id, sequence)
);
CREATE INDEX retained_published ON ${S}.retained (topic_id, published_at);

CREATE TABLE ${S}.subscriptions (
  queue_id int PRIMARY KEY,
  -- Publish fans out in subscription order; rebinding keeps the place.
  position bigint GENERATED ALWAYS AS IDENTITY,
  topics text[] NOT NULL,
  -- The topic patterns as anchored regular expressions over '.' || topic (see topic-regex.ts).
  patterns text[] NOT NULL,
  filter jsonb
);

CREATE FUNCTION ${S}.header_matches(v text, c jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE jsonb_typeof(c)
    WHEN 'string' THEN v IS NOT NULL AND v = c #>> '{}'
    WHEN 'array' THEN v IS NOT NULL AND c @> to_jsonb(v)
    ELSE CASE WHEN c ? 'exists' THEN (v IS NOT NULL) = (c ->> 'exists')::boolean
              ELSE v IS NOT NULL AND starts_with(v, c ->> 'prefix') END
  END
$$;

-- filterMatches of routing.ts over a message's props.
CREATE FUNCTION ${S}.filter_matches(f jsonb, props json) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT f IS NULL OR (
    (NOT f ? 'subject' OR (props ->> 'subject' IS NOT NULL AND CASE jsonb_typeof(f -> 'subject')
       WHEN 'array' THEN f -> 'subject' @> to_jsonb(props ->> 'subject')
       ELSE f ->> 'subject' = props ->> 'subject' END))
    AND NOT EXISTS (
      SELECT 1 FROM jsonb_each(coalesce(f -> 'headers', '{}')) AS c
      WHERE NOT ${S}.header_matches(props -> 'headers' ->> c.key, c.value))
  )
$$;

${advanceSessionsFunction(schema, false)}${enqueueFunction(schema, false)}CREATE FUNCTION ${S}.send(p_queue text, p_nows float8[], p_ids text[], p_bodies bytea[], p_props json[],
  p_priorities smallint[], p_session_ids text[], p_available_ats float8[], p_expires_ats float8[])
RETURNS TABLE (ord int, sequence bigint)
${entryPoint}
#variable_conflict use_column
DECLARE
  q ${S}.queues;
BEGIN
  ${lookupQueue('p_queue')}
  RETURN QUERY SELECT e.ord, e.sequence FROM ${S}.enqueue(q, p_nows, p_ids, p_bodies, p_props, p_priorities,
    p_session_ids, p_available_ats, p_expires_ats, NULL) AS e;
  -- Housekeeping: now and then, forget ids whose window has passed (a stale claim is reclaimed anyway).
  IF q.duplicate_window_ms > 0 AND random() < 0.01 THEN
    DELETE FROM ${S}.dedup WHERE ctid = ANY (ARRAY(
      SELECT x.ctid FROM ${S}.dedup x WHERE x.expires_at <= p_nows[1] LIMIT 1000 FOR UPDATE SKIP LOCKED));
  END IF;
END
$$;

${receiveFunction(schema, false)}-- Settling finds a delivery by its sequence (the primary key, with = ANY whatever the statistics) and its token.
-- A token is only ever set while the message is locked (messages_locked_token), so a match means it is still
-- held by that delivery; not restating state = 'locked' keeps the planner off the partial index of due messages.
CREATE FUNCTION ${S}.renew(p_queue text, p_sequences bigint[], p_tokens uuid[], p_lock_ms float8, p_now float8)
RETURNS TABLE (lock_token uuid, locked_until float8)
${entryPoint}
#variable_conflict use_column
DECLARE
  q ${S}.queues;
BEGIN
  ${lookupQueue('p_queue')}
  RETURN QUERY
  UPDATE ${S}.messages m SET locked_until = p_now + p_lock_ms
  WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.lock_token = ANY (p_tokens)
  RETURNING m.lock_token, m.locked_until;
END
$$;

-- Deletes the messages of the given deliveries; returns the tokens that still held them. p_nows: per token.
CREATE FUNCTION ${S}.complete(p_queue text, p_sequences bigint[], p_tokens uuid[], p_nows float8[])
RETURNS SETOF uuid
${entryPoint}
DECLARE
  q ${S}.queues;
  done uuid[];
  ended text[];
  ended_at float8;
BEGIN
  ${lookupQueue('p_queue')}
  WITH gone AS (
    DELETE FROM ${S}.messages m
    WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.lock_token = ANY (p_tokens)
    RETURNING m.sequence, m.lock_token, m.session_key
  ), unstored AS (
    DELETE FROM ${S}.payloads b WHERE b.sequence = ANY (ARRAY(SELECT g.sequence FROM gone g))
  )
  SELECT array_agg(g.lock_token), array_agg(g.session_key) FILTER (WHERE g.session_key IS NOT NULL),
    max(p_nows[array_position(p_tokens, g.lock_token)]) FILTER (WHERE g.session_key IS NOT NULL)
    INTO done, ended, ended_at
  FROM gone g;
  IF ended IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ended, ended_at);
  END IF;
  RETURN QUERY SELECT unnest(done);
END
$$;

CREATE FUNCTION ${S}.abandon(p_queue text, p_sequence bigint, p_token uuid, p_delay_ms float8, p_now float8)
RETURNS boolean
${entryPoint}
DECLARE
  q ${S}.queues;
  new_state text;
  v_key text;
BEGIN
  ${lookupQueue('p_queue')}
  UPDATE ${S}.messages m SET
    state = CASE WHEN m.delivery_count >= q.max_delivery_count THEN 'dead'
                 WHEN p_now + p_delay_ms > p_now THEN 'scheduled' ELSE 'available' END,
    available_at = CASE WHEN m.delivery_count >= q.max_delivery_count THEN m.available_at ELSE p_now + p_delay_ms END,
    rank = CASE WHEN m.delivery_count >= q.max_delivery_count THEN m.rank
                ELSE ${rank('(p_now + p_delay_ms)', 'm.priority')} END,
    lock_token = NULL,
    locked_until = NULL,
    dead_reason = CASE WHEN m.delivery_count >= q.max_delivery_count THEN '${DEAD_LETTER_MAX_DELIVERIES}' END,
    dead_at = CASE WHEN m.delivery_count >= q.max_delivery_count THEN p_now END
  WHERE m.queue_id = q.id AND m.sequence = p_sequence AND m.lock_token = p_token
  RETURNING m.state, m.session_key INTO new_state, v_key;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF new_state = 'dead' AND v_key IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ARRAY[v_key], p_now);
  ELSIF new_state = 'available' THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
  RETURN true;
END
$$;

CREATE FUNCTION ${S}.dead_letter(p_queue text, p_sequence bigint, p_token uuid, p_reason text,
  p_description text, p_now float8)
RETURNS boolean
${entryPoint}
DECLARE
  q ${S}.queues;
  v_key text;
BEGIN
  ${lookupQueue('p_queue')}
  UPDATE ${S}.messages m SET state = 'dead', lock_token = NULL, locked_until = NULL,
    dead_reason = p_reason, dead_description = p_description, dead_at = p_now
  WHERE m.queue_id = q.id AND m.sequence = p_sequence AND m.lock_token = p_token
  RETURNING m.session_key INTO v_key;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_key IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ARRAY[v_key], p_now);
  END IF;
  RETURN true;
END
$$;

${listMessagesFunction(schema, false)}CREATE FUNCTION ${S}.stats(p_queue text)
RETURNS TABLE (available bigint, scheduled bigint, locked bigint, waiting bigint, dead bigint, oldest float8)
${entryPoint}
DECLARE
  q ${S}.queues;
BEGIN
  ${lookupQueue('p_queue')}
  RETURN QUERY
  SELECT count(*) FILTER (WHERE m.state = 'available'), count(*) FILTER (WHERE m.state = 'scheduled'),
    count(*) FILTER (WHERE m.state = 'locked'), count(*) FILTER (WHERE m.state = 'waiting'),
    (SELECT count(*) FROM ${S}.messages d WHERE d.queue_id = q.id AND d.state = 'dead'), min(m.enqueued_at)
  FROM ${S}.messages m WHERE m.queue_id = q.id AND m.state <> 'dead';
END
$$;

CREATE FUNCTION ${S}.resend(p_queue text, p_sequences bigint[], p_now float8) RETURNS int
${entryPoint}
DECLARE
  q ${S}.queues;
  keys text[];
  resent int;
BEGIN
  ${lookupQueue('p_queue')}
  SELECT array_agg(d.session_key) INTO keys FROM (
    SELECT m.session_key FROM ${S}.messages m
    WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.state = 'dead'
    FOR UPDATE
  ) AS d;
  IF keys IS NOT NULL THEN
    ${lockSessions('keys')}
  END IF;
  WITH busy AS (
    SELECT DISTINCT h.session_key FROM ${S}.messages h
    WHERE h.queue_id = q.id AND h.session_key = ANY (keys) AND h.state <> 'dead'
  ), target AS (
    SELECT m.sequence, m.session_key IS NOT NULL AND (
        row_number() OVER (PARTITION BY m.session_key ORDER BY m.sequence) > 1
        OR m.session_key IN (SELECT b.session_key FROM busy b)) AS waits
    FROM ${S}.messages m
    WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.state = 'dead'
  )
  UPDATE ${S}.messages m SET
    state = CASE WHEN t.waits THEN 'waiting' ELSE 'available' END,
    available_at = p_now, rank = ${rank('p_now', 'm.priority')}, delivery_count = 0,
    dead_reason = NULL, dead_description = NULL, dead_at = NULL
  FROM target t WHERE m.queue_id = q.id AND m.sequence = t.sequence;
  GET DIAGNOSTICS resent = ROW_COUNT;
  IF resent > 0 THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
  RETURN resent;
END
$$;

CREATE FUNCTION ${S}.purge(p_queue text, p_sequences bigint[]) RETURNS int
${entryPoint}
DECLARE
  q ${S}.queues;
  purged int;
BEGIN
  ${lookupQueue('p_queue')}
  WITH gone AS (
    DELETE FROM ${S}.messages m
    WHERE m.queue_id = q.id AND m.state = 'dead' AND (p_sequences IS NULL OR m.sequence = ANY (p_sequences))
    RETURNING m.sequence
  ), unstored AS (
    DELETE FROM ${S}.payloads b WHERE b.sequence = ANY (ARRAY(SELECT g.sequence FROM gone g))
  )
  SELECT count(*) INTO purged FROM gone;
  RETURN purged;
END
$$;

CREATE FUNCTION ${S}.get_session_state(p_queue text, p_session text) RETURNS TABLE (state bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  q ${S}.queues;
BEGIN
  ${lookupQueue('p_queue')}
  RETURN QUERY SELECT s.state FROM ${S}.sessions s WHERE s.queue_id = q.id AND s.session_id = p_session;
END
$$;

CREATE FUNCTION ${S}.set_session_state(p_queue text, p_session text, p_state bytea) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  q ${S}.queues;
BEGIN
  ${lookupQueue('p_queue')}
  IF p_state IS NULL THEN
    DELETE FROM ${S}.sessions WHERE queue_id = q.id AND session_id = p_session;
  ELSE
    INSERT INTO ${S}.sessions (queue_id, session_id, state) VALUES (q.id, p_session, p_state)
    ON CONFLICT (queue_id, session_id) DO UPDATE SET state = excluded.state;
  END IF;
END
$$;

CREATE FUNCTION ${S}.delete_queue(p_queue text) RETURNS boolean
${entryPoint}
DECLARE
  gone int;
BEGIN
  DELETE FROM ${S}.queues WHERE name = p_queue RETURNING id INTO gone;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM ${S}.payloads WHERE sequence = ANY (ARRAY(SELECT sequence FROM ${S}.messages WHERE queue_id = gone));
  DELETE FROM ${S}.messages WHERE queue_id = gone;
  DELETE FROM ${S}.dedup WHERE queue_id = gone;
  DELETE FROM ${S}.sessions WHERE queue_id = gone;
  DELETE FROM ${S}.subscriptions WHERE queue_id = gone;
  RETURN true;
END
$$;

CREATE FUNCTION ${S}.delete_topic(p_topic text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  gone int;
BEGIN
  DELETE FROM ${S}.topics WHERE name = p_topic RETURNING id INTO gone;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  DELETE FROM ${S}.retained WHERE topic_id = gone;
  RETURN true;
END
$$;

-- Binds the queue and, when p_since is not NULL, copies the retained messages published since then (all:
-- '-Infinity') that match into it, under the exclusive topic lock.
CREATE FUNCTION ${S}.subscribe(p_queue text, p_topics text[], p_patterns text[], p_filter jsonb, p_since float8,
  p_now float8)
RETURNS void
${entryPoint}
DECLARE
  q ${S}.queues;
  r record;
BEGIN
  PERFORM pg_advisory_xact_lock(${topicLock});
  ${lookupQueue('p_queue')}
  INSERT INTO ${S}.subscriptions (queue_id, topics, patterns, filter) VALUES (q.id, p_topics, p_patterns, p_filter)
  ON CONFLICT (queue_id) DO UPDATE SET topics = excluded.topics, patterns = excluded.patterns, filter = excluded.filter;
  IF p_since IS NULL THEN
    RETURN;
  END IF;
  DELETE FROM ${S}.retained x USING ${S}.topics t
  WHERE x.topic_id = t.id AND x.published_at <= p_now - t.retention_ms;
  SELECT array_agg(p_now ORDER BY x.sequence) AS nows, array_agg(x.id ORDER BY x.sequence) AS ids,
    array_agg(x.body ORDER BY x.sequence) AS bodies, array_agg(x.props ORDER BY x.sequence) AS props,
    array_agg(x.priority ORDER BY x.sequence) AS priorities, array_agg(x.session_id ORDER BY x.sequence) AS sessions,
    array_agg(x.available_at ORDER BY x.sequence) AS available_ats,
    array_agg(x.expires_at ORDER BY x.sequence) AS expires_ats
  INTO r
  FROM ${S}.retained x JOIN ${S}.topics t ON t.id = x.topic_id
  WHERE ('.' || t.name) ~ ANY (p_patterns) AND x.published_at >= p_since AND ${S}.filter_matches(p_filter, x.props);
  IF r.ids IS NOT NULL THEN
    PERFORM FROM ${S}.enqueue(q, r.nows, r.ids, r.bodies, r.props, r.priorities, r.sessions, r.available_ats,
      r.expires_ats, NULL);
  END IF;
END
$$;

-- Fans the messages out to the matching subscriptions in subscription order and retains them; returns
-- (ordinal, queue) for every copy accepted.
CREATE FUNCTION ${S}.publish(p_topic text, p_ids text[], p_bodies bytea[], p_props json[], p_priorities smallint[],
  p_session_ids text[], p_available_ats float8[], p_expires_ats float8[], p_now float8)
RETURNS TABLE (ord int, queue text)
${entryPoint}
#variable_conflict use_column
DECLARE
  t ${S}.topics;
  q ${S}.queues;
  sub record;
  nows float8[] := array_fill(p_now, ARRAY[cardinality(p_ids)]);
  matched int[];
BEGIN
  PERFORM pg_advisory_xact_lock_shared(${topicLock});
  SELECT * INTO t FROM ${S}.topics WHERE name = p_topic;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'unknown topic %', p_topic USING ERRCODE = '${UNKNOWN_TOPIC_SQLSTATE}';
  END IF;
  FOR sub IN
    SELECT s.queue_id, s.filter FROM ${S}.subscriptions s WHERE ('.' || p_topic) ~ ANY (s.patterns) ORDER BY s.position
  LOOP
    SELECT * INTO q FROM ${S}.queues WHERE id = sub.queue_id;
    CONTINUE WHEN NOT FOUND;
    matched := NULL;
    IF sub.filter IS NOT NULL THEN
      SELECT array_agg(i) INTO matched FROM generate_subscripts(p_ids, 1) AS i
      WHERE ${S}.filter_matches(sub.filter, p_props[i]);
      CONTINUE WHEN matched IS NULL;
    END IF;
    RETURN QUERY SELECT e.ord, q.name FROM ${S}.enqueue(q, nows, p_ids, p_bodies, p_props, p_priorities,
      p_session_ids, p_available_ats, p_expires_ats, matched) AS e;
  END LOOP;
  IF t.retention_ms > 0 THEN
    INSERT INTO ${S}.retained (topic_id, published_at, id, body, props, priority, session_id, available_at, expires_at)
    SELECT t.id, p_now, i.id, i.body, i.props, i.priority, i.session_id, i.available_at, i.expires_at
    FROM unnest(p_ids, p_bodies, p_props, p_priorities, p_session_ids, p_available_ats, p_expires_ats)
      WITH ORDINALITY AS i(id, body, props, priority, session_id, available_at, expires_at, ord)
    ORDER BY i.ord;
    DELETE FROM ${S}.retained WHERE topic_id = t.id AND published_at <= p_now - t.retention_ms;
  END IF;
END
$$;
`;
}

/**
 * 2: session batches. A receive may lock a session's next messages with its head (receive's p_batches), and a session
 * message whose lock ends sends the messages locked behind it back to waiting; complete_and_receive.
 */
function sessionBatchesMigration(schema: string): string {
  const { S, lookupQueue, lockDelivery, entryPoint } = sqlParts(schema);
  return `
${unlockMessageFunction(schema, false)}CREATE OR REPLACE FUNCTION ${S}.abandon(p_queue text, p_sequence bigint, p_token uuid, p_delay_ms float8,
  p_now float8)
RETURNS boolean
${entryPoint}
DECLARE
  q ${S}.queues;
  v_key text;
BEGIN
  ${lookupQueue('p_queue')}${lockDelivery}
  PERFORM ${S}.unlock_message(q, p_sequence, v_key, p_now + p_delay_ms, p_now);
  RETURN true;
END
$$;

${receiveFunction(schema, true)}
-- complete of one delivery, then (unless its lock was lost) receive, in one transaction: a session's next message,
-- promoted by the completion, can come back at once. A lost lock answers one row with slot 0 and nothing else.
CREATE FUNCTION ${S}.complete_and_receive(p_queue text, p_sequence bigint, p_token uuid, p_max int,
  p_lock_ms float8, p_now float8, p_batch int)
${RECEIVED_ROWS}
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM ${S}.complete(p_queue, ARRAY[p_sequence], ARRAY[p_token], ARRAY[p_now])) THEN
    RETURN QUERY SELECT 0, NULL::bigint, NULL::text, NULL::bytea, NULL::json, NULL::smallint, NULL::float8,
      NULL::float8, NULL::float8, NULL::int, NULL::uuid, NULL::float8, NULL::float8;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ${S}.receive(p_queue, ARRAY[p_max], ARRAY[p_lock_ms], ARRAY[p_now], ARRAY[p_batch]);
END
$$;

-- What processes of the previous release call until they are restarted: one message per session head.
CREATE OR REPLACE FUNCTION ${S}.receive(p_queue text, p_maxes int[], p_lock_ms float8[], p_nows float8[])
${RECEIVED_ROWS}
LANGUAGE sql AS $$
  SELECT * FROM ${S}.receive(p_queue, p_maxes, p_lock_ms, p_nows, array_fill(1, ARRAY[cardinality(p_maxes)]))
$$;`;
}

/**
 * A receive on its own commits without waiting for its WAL to reach the disk: what it writes are locks (and
 * expiries it would redo), and a lock lost with a crashed server only brings its message back, as an expired lock
 * does. The durable commit of the send before it and of the completion after it (which flushes the receive's WAL
 * too) are what delivery rests on. An idle consumer then starts a message one disk flush after it was sent, not two.
 * complete_and_receive stays durable: its completion must not come undone.
 */
function asyncReceiveMigration(schema: string): string {
  const { S } = sqlParts(schema);
  return `CREATE FUNCTION ${S}.receive_async_commit(p_queue text, p_maxes int[], p_lock_ms float8[], p_nows float8[],
  p_batches int[])
${RECEIVED_ROWS}
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY SELECT * FROM ${S}.receive(p_queue, p_maxes, p_lock_ms, p_nows, p_batches);
END
$$;`;
}

/** The migrations of a schema, in order: entry i brings the schema to version i + 1. */
export function migrations(schema: string): readonly string[] {
  return [
    firstMigration(schema),
    sessionBatchesMigration(schema),
    asyncReceiveMigration(schema),
    sessionHoldMigration(schema),
    genericPlansMigration(schema),
  ];
}
