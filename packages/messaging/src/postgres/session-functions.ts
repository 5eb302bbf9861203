// The PostgreSQL functions of session gating, as first created and as the session-hold migration replaces them:
// `hold` adds the dead letters that hold their session (QueueSettings.onSessionDeadLetter). Without it each returns
// its released text exactly, so the earlier migrations stay as they were.
import { DEAD_LETTER_MAX_DELIVERIES } from '../backend.js';
import { sqlParts } from './sql-parts.js';

const createOf = (hold: boolean) => (hold ? 'CREATE OR REPLACE' : 'CREATE');

/** advance_sessions: promotes each session's next waiting message once nothing holds the session. */
export function advanceSessionsFunction(schema: string, hold: boolean): string {
  const { S, channel, rank, lockSessions } = sqlParts(schema);
  const create = createOf(hold);
  return `-- Makes the next waiting message of each given session its head once the head left (completed or dead)${
    hold ? ',\n-- or a dead letter stopped holding the session, unless another still does' : ''
  }.
${create} FUNCTION ${S}.advance_sessions(q ${S}.queues, p_keys text[], p_now float8) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_key text;
  promoted int := 0;
  one int;
BEGIN
  ${lockSessions('p_keys')}
  -- One session at a time, so that every lookup is an index probe on (queue, session) whatever the statistics.
  FOREACH v_key IN ARRAY p_keys LOOP
    CONTINUE WHEN EXISTS (
      SELECT 1 FROM ${S}.messages h
      WHERE h.queue_id = q.id AND h.session_key = v_key AND h.state IN ('available', 'scheduled', 'locked'))${
        hold
          ? `\n      OR EXISTS (SELECT 1 FROM ${S}.messages d
        WHERE d.queue_id = q.id AND d.session_key = v_key AND d.holds_session)`
          : ''
      };
    UPDATE ${S}.messages m SET
      state = CASE WHEN m.available_at > p_now THEN 'scheduled' ELSE 'available' END,
      available_at = greatest(m.available_at, p_now),
      rank = ${rank('greatest(m.available_at, p_now)', 'm.priority')}
    WHERE m.queue_id = q.id AND m.sequence = (
      SELECT w.sequence FROM ${S}.messages w
      WHERE w.queue_id = q.id AND w.session_key = v_key AND w.state = 'waiting'
      ORDER BY w.sequence LIMIT 1);
    GET DIAGNOSTICS one = ROW_COUNT;
    promoted := promoted + one;
  END LOOP;
  IF promoted > 0 THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
END
$$;

`;
}

/** enqueue: stores messages, each behind its session's head (or a dead letter holding the session). */
export function enqueueFunction(schema: string, hold: boolean): string {
  const { S, channel, rank, lockSessions } = sqlParts(schema);
  const create = createOf(hold);
  return `-- Stores messages in order with duplicate detection and session gating; returns (ordinal, sequence) of the
-- accepted ones. p_pick selects ordinals of the arrays (NULL: all). Each message has its own now (group commit).
${create} FUNCTION ${S}.enqueue(q ${S}.queues, p_nows float8[], p_ids text[], p_bodies bytea[], p_props json[],
  p_priorities smallint[], p_session_ids text[], p_available_ats float8[], p_expires_ats float8[], p_pick int[])
RETURNS TABLE (ord int, sequence bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  IF q.sessions THEN
    ${lockSessions('p_session_ids')}
  END IF;
  RETURN QUERY
  WITH input AS (
    SELECT i.ord::int AS ord, i.now, i.id, i.body, i.props, coalesce(i.priority, 0)::smallint AS priority,
      CASE WHEN q.sessions THEN i.session_id END AS session_key,
      coalesce(i.available_at, i.now) AS available_at,
      coalesce(i.expires_at, i.now + q.default_ttl_ms) AS expires_at,
      row_number() OVER (PARTITION BY i.id ORDER BY i.ord) AS copy
    FROM unnest(p_nows, p_ids, p_bodies, p_props, p_priorities, p_session_ids, p_available_ats, p_expires_ats)
      WITH ORDINALITY AS i(now, id, body, props, priority, session_id, available_at, expires_at, ord)
    WHERE p_pick IS NULL OR i.ord = ANY (p_pick)
  ), claimed AS (
    -- The first copy of an id claims it unless a claim within the window exists; ids in order against deadlocks.
    INSERT INTO ${S}.dedup AS d (queue_id, id, seen_at, expires_at)
    SELECT q.id, i.id, i.now, i.now + q.duplicate_window_ms FROM input i
    WHERE q.duplicate_window_ms > 0 AND i.copy = 1
    ORDER BY i.id
    ON CONFLICT (queue_id, id) DO UPDATE SET seen_at = excluded.seen_at, expires_at = excluded.expires_at
      WHERE d.expires_at <= excluded.seen_at
    RETURNING d.id
  ), accepted AS (
    -- nextval runs after the sort, so sequences follow the batch order.
    SELECT i.*, nextval('${S}.message_sequence') AS sequence FROM input i
    WHERE q.duplicate_window_ms <= 0 OR (i.copy = 1 AND i.id IN (SELECT c.id FROM claimed c))
    ORDER BY i.ord
  ), busy AS (
    -- Sessions that already have a message${hold ? ' or a dead letter holding them' : ''}; = ANY keeps this an index probe whatever the statistics.
    SELECT DISTINCT m.session_key FROM ${S}.messages m
    WHERE q.sessions AND m.queue_id = q.id AND m.session_key = ANY (p_session_ids) AND m.state <> 'dead'${
      hold
        ? `
    UNION
    SELECT d.session_key FROM ${S}.messages d
    WHERE q.sessions AND d.queue_id = q.id AND d.session_key = ANY (p_session_ids) AND d.holds_session`
        : ''
    }
  ), gated AS (
    SELECT a.*, a.session_key IS NOT NULL AND (
        row_number() OVER (PARTITION BY a.session_key ORDER BY a.ord) > 1
        OR a.session_key IN (SELECT b.session_key FROM busy b)) AS waits
    FROM accepted a
  ), inserted AS (
    INSERT INTO ${S}.messages (queue_id, sequence, state, rank, available_at, priority, session_key, enqueued_at,
      expires_at)
    SELECT q.id, g.sequence,
      CASE WHEN g.waits THEN 'waiting' WHEN g.available_at > g.now THEN 'scheduled' ELSE 'available' END,
      ${rank('g.available_at', 'g.priority')}, g.available_at, g.priority, g.session_key, g.now, g.expires_at
    FROM gated g
  ), stored AS (
    INSERT INTO ${S}.payloads (sequence, id, props, body)
    SELECT a.sequence, a.id, a.props, a.body FROM accepted a
  )
  SELECT a.ord, a.sequence FROM accepted a;
  IF FOUND THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
END
$$;

`;
}

/** unlock_message: a lock ends; past the last delivery the message dies, holding its session where the queue says. */
export function unlockMessageFunction(schema: string, hold: boolean): string {
  const { S, channel, rank, lockSessions } = sqlParts(schema);
  const create = createOf(hold);
  const exhausted = 'm.delivery_count >= q.max_delivery_count';
  return `-- A message's lock ends (abandoned, or expired): in a session, the messages locked behind it go back to waiting
-- (their locks are lost). It is dead-lettered past its last delivery (and its session ${
    hold ? 'holds or moves on' : 'moves on'
  }), waits while a
-- message of its session before it is still held, and otherwise becomes deliverable at p_at. Returns its new state.
${create} FUNCTION ${S}.unlock_message(q ${S}.queues, p_sequence bigint, p_key text, p_at float8, p_now float8)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  new_state text;
BEGIN
  IF p_key IS NOT NULL THEN
    ${lockSessions('ARRAY[p_key]')}
    UPDATE ${S}.messages m SET state = 'waiting', lock_token = NULL, locked_until = NULL
    WHERE m.queue_id = q.id AND m.session_key = p_key AND m.state = 'locked' AND m.sequence > p_sequence;
  END IF;
  UPDATE ${S}.messages m SET
    state = CASE WHEN ${exhausted} THEN 'dead'
                 WHEN p_key IS NOT NULL AND EXISTS (
                   SELECT 1 FROM ${S}.messages h
                   WHERE h.queue_id = q.id AND h.session_key = p_key AND h.sequence < p_sequence
                     AND h.state IN ('available', 'scheduled', 'locked')) THEN 'waiting'
                 WHEN p_at > p_now THEN 'scheduled' ELSE 'available' END,
    available_at = CASE WHEN ${exhausted} THEN m.available_at ELSE p_at END,
    rank = CASE WHEN ${exhausted} THEN m.rank ELSE ${rank('p_at', 'm.priority')} END,
    lock_token = NULL,
    locked_until = NULL,
    dead_reason = CASE WHEN ${exhausted} THEN '${DEAD_LETTER_MAX_DELIVERIES}' END,
    dead_at = CASE WHEN ${exhausted} THEN p_now END${
      hold
        ? `,\n    holds_session = ${exhausted} AND p_key IS NOT NULL AND q.sessions AND q.on_session_dead_letter = 'hold'`
        : ''
    }
  WHERE m.sequence = p_sequence
  RETURNING m.state INTO new_state;
  IF new_state = 'dead' AND p_key IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ARRAY[p_key], p_now);
  ELSIF new_state = 'available' THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
  RETURN new_state;
END
$$;

`;
}

/** list_messages: peek and the dead-letter listing; with `hold` it also says which dead letters hold a session. */
export function listMessagesFunction(schema: string, hold: boolean): string {
  const { S, lookupQueue, entryPoint } = sqlParts(schema);
  return `-- Live messages (p_dead false) or dead letters (true) after a sequence, in sequence order.
${
  hold ? `DROP FUNCTION ${S}.list_messages(text, boolean, bigint, int);\n` : ''
}CREATE FUNCTION ${S}.list_messages(p_queue text, p_dead boolean, p_after bigint, p_limit int)
RETURNS TABLE (sequence bigint, id text, body bytea, props json, priority smallint, enqueued_at float8,
  available_at float8, expires_at float8, delivery_count int, state text, dead_reason text,
  dead_description text, dead_at float8${hold ? ', holds_session boolean' : ''})
${entryPoint}
#variable_conflict use_column
DECLARE
  q ${S}.queues;
  page bigint[];
BEGIN
  ${lookupQueue('p_queue')}
  -- The page first (two statements, so that each can use its index: dead letters have their own), then its
  -- rows and payloads by primary key.
  IF p_dead THEN
    page := ARRAY(SELECT m.sequence FROM ${S}.messages m
      WHERE m.queue_id = q.id AND m.state = 'dead' AND m.sequence > p_after ORDER BY m.sequence LIMIT p_limit);
  ELSE
    page := ARRAY(SELECT m.sequence FROM ${S}.messages m
      WHERE m.queue_id = q.id AND m.state <> 'dead' AND m.sequence > p_after ORDER BY m.sequence LIMIT p_limit);
  END IF;
  RETURN QUERY
  SELECT m.sequence, b.id, b.body, b.props, m.priority, m.enqueued_at, m.available_at, m.expires_at,
    m.delivery_count, m.state, m.dead_reason, m.dead_description, m.dead_at${hold ? ', m.holds_session' : ''}
  FROM ${S}.messages m JOIN ${S}.payloads b ON b.sequence = m.sequence
  WHERE m.queue_id = q.id AND m.sequence = ANY (page) AND b.sequence = ANY (page)
  ORDER BY m.sequence;
END
$$;

`;
}
