import { DEAD_LETTER_EXPIRED } from '../backend.js';
import {
  advanceSessionsFunction,
  enqueueFunction,
  listMessagesFunction,
  unlockMessageFunction,
} from './session-functions.js';
import { sqlParts } from './sql-parts.js';

/**
 * 4: a dead letter may hold its session (QueueSettings.onSessionDeadLetter, stored per queue; queues made before
 * get 'hold', the default). Such a dead letter has holds_session set: while a session has one, send, resend and
 * advance_sessions leave its messages waiting. Resending it or purging it releases the session: purge takes a
 * `now` for the message that goes on (the two-argument purge of the previous release reads the server's clock).
 */
export function sessionHoldMigration(schema: string): string {
  const { S, channel, rank, lookupQueue, lockDelivery, lockSessions, entryPoint } = sqlParts(schema);
  return `
ALTER TABLE ${S}.queues ADD COLUMN on_session_dead_letter text NOT NULL DEFAULT 'hold';
ALTER TABLE ${S}.messages ADD COLUMN holds_session boolean NOT NULL DEFAULT false;
-- Whether a session is held: only the dead letters that hold one are in it.
CREATE INDEX messages_holding ON ${S}.messages (queue_id, session_key) WHERE holds_session;

${advanceSessionsFunction(schema, true)}${enqueueFunction(schema, true)}${unlockMessageFunction(schema, true)}${listMessagesFunction(schema, true)}
-- A dead letter that holds its session sends the messages locked behind it back to waiting (their locks are lost),
-- so none of them is handled before it.
CREATE OR REPLACE FUNCTION ${S}.dead_letter(p_queue text, p_sequence bigint, p_token uuid, p_reason text,
  p_description text, p_now float8)
RETURNS boolean
${entryPoint}
DECLARE
  q ${S}.queues;
  v_key text;
  v_holds boolean;
BEGIN
  ${lookupQueue('p_queue')}${lockDelivery}
  -- holdsSession in backend.ts.
  v_holds := v_key IS NOT NULL AND q.sessions AND q.on_session_dead_letter = 'hold'
    AND p_reason <> '${DEAD_LETTER_EXPIRED}';
  IF v_holds THEN
    ${lockSessions('ARRAY[v_key]')}
    UPDATE ${S}.messages m SET state = 'waiting', lock_token = NULL, locked_until = NULL
    WHERE m.queue_id = q.id AND m.session_key = v_key AND m.state = 'locked' AND m.sequence > p_sequence;
  END IF;
  UPDATE ${S}.messages m SET state = 'dead', lock_token = NULL, locked_until = NULL,
    dead_reason = p_reason, dead_description = p_description, dead_at = p_now, holds_session = v_holds
  WHERE m.sequence = p_sequence;
  IF v_key IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, ARRAY[v_key], p_now);
  END IF;
  RETURN true;
END
$$;

-- A resent session message joins its session's waiting messages; advance_sessions then lets the first of them (by
-- sequence) go on, unless the session has a head or another dead letter holds it. A resent dead letter that held
-- its session thus comes back before the messages that waited behind it.
CREATE OR REPLACE FUNCTION ${S}.resend(p_queue text, p_sequences bigint[], p_now float8) RETURNS int
${entryPoint}
DECLARE
  q ${S}.queues;
  keys text[];
  resent int;
BEGIN
  ${lookupQueue('p_queue')}
  keys := ARRAY(
    SELECT DISTINCT d.session_key FROM (
      SELECT m.session_key FROM ${S}.messages m
      WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.state = 'dead'
      FOR UPDATE
    ) AS d
    WHERE d.session_key IS NOT NULL);
  ${lockSessions('keys')}
  UPDATE ${S}.messages m SET
    state = CASE WHEN m.session_key IS NOT NULL THEN 'waiting' ELSE 'available' END,
    available_at = p_now, rank = ${rank('p_now', 'm.priority')}, delivery_count = 0,
    dead_reason = NULL, dead_description = NULL, dead_at = NULL, holds_session = false
  WHERE m.queue_id = q.id AND m.sequence = ANY (p_sequences) AND m.state = 'dead';
  GET DIAGNOSTICS resent = ROW_COUNT;
  IF cardinality(keys) > 0 THEN
    PERFORM ${S}.advance_sessions(q, keys, p_now);
  END IF;
  IF resent > 0 THEN
    PERFORM pg_notify(${channel}, q.name);
  END IF;
  RETURN resent;
END
$$;

-- Deletes dead letters; the sessions they held go on.
CREATE FUNCTION ${S}.purge(p_queue text, p_sequences bigint[], p_now float8) RETURNS int
${entryPoint}
DECLARE
  q ${S}.queues;
  purged int;
  released text[];
BEGIN
  ${lookupQueue('p_queue')}
  WITH gone AS (
    DELETE FROM ${S}.messages m
    WHERE m.queue_id = q.id AND m.state = 'dead' AND (p_sequences IS NULL OR m.sequence = ANY (p_sequences))
    RETURNING m.sequence, m.session_key, m.holds_session
  ), unstored AS (
    DELETE FROM ${S}.payloads b WHERE b.sequence = ANY (ARRAY(SELECT g.sequence FROM gone g))
  )
  SELECT count(*), array_agg(DISTINCT g.session_key) FILTER (WHERE g.holds_session) INTO purged, released
  FROM gone g;
  IF released IS NOT NULL THEN
    PERFORM ${S}.advance_sessions(q, released, p_now);
  END IF;
  RETURN purged;
END
$$;

-- What processes of the previous release call until they are restarted.
CREATE OR REPLACE FUNCTION ${S}.purge(p_queue text, p_sequences bigint[]) RETURNS int
LANGUAGE sql AS $$
  SELECT ${S}.purge(p_queue, p_sequences, extract(epoch FROM clock_timestamp())::float8 * 1000)
$$;
`;
}
