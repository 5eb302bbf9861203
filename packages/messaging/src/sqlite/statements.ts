/**
 * The SQL of the SQLite message backend, with the row shapes it returns. Every statement is prepared once per
 * connection (SqliteDatabase caches them by text) and takes positional parameters.
 */
import { SQLITE_LIMIT } from '@stratus/sql';
import { MAX_PRIORITY, type MessageState } from '../backend.js';

export interface QueueRow {
  id: number;
  settings: string;
}

export interface MessageRow {
  sequence: number;
  state: MessageState;
  available_at: number;
  due_at: number | null;
  delivery_count: number;
  expires_at: number | null;
  enqueued_at: number;
  priority: number;
  session: string | null;
  id: string;
  session_id: string | null;
  content_type: string | null;
  correlation_id: string | null;
  reply_to: string | null;
  subject: string | null;
  headers: string | null;
  dead_reason: string | null;
  dead_description: string | null;
  dead_at: number | null;
  body: Uint8Array;
}

export interface RetainedRow {
  topic: string;
  id: string;
  available_at: number | null;
  expires_at: number | null;
  priority: number | null;
  session_id: string | null;
  content_type: string | null;
  correlation_id: string | null;
  reply_to: string | null;
  subject: string | null;
  headers: string | null;
  body: Uint8Array;
}

export interface SubscriptionRow {
  queue: string;
  topics: string;
  filter: string | null;
}

export interface StatsRow {
  available: number;
  scheduled: number;
  locked: number;
  waiting: number;
  dead: number;
  oldest: number | null;
}

export interface DueRow {
  scheduled: number | null;
  locked: number | null;
}

export interface ProbeRow extends DueRow {
  available: number;
}

const MESSAGE_COLUMNS =
  'sequence, state, available_at, due_at, delivery_count, expires_at, enqueued_at, priority, session, id, ' +
  'session_id, content_type, correlation_id, reply_to, subject, headers, dead_reason, dead_description, dead_at, body';

/**
 * Duplicate-window entries are swept in key order, SWEEP_SIZE at a time after every SWEEP_EVERY ids recorded:
 * each entry is visited within about (table size / 4) sends, so the table holds at most about 1.25 windows of
 * ids, and a sweep dirties a few adjacent pages once in a while instead of pages all over on every send.
 */
export const SWEEP_EVERY = 64;
const SWEEP_SIZE = 4 * SWEEP_EVERY;

/** Each queue's messages have the sequences (rowids) [id * QUEUE_RANGE, (id + 1) * QUEUE_RANGE). */
export const QUEUE_RANGE = 2 ** 32;
/** Sequences stay below 2^53 (exact as JavaScript numbers). */
export const MAX_QUEUE_ID = 2 ** 21 - 1;
const FIRST = `q.id * ${QUEUE_RANGE}`;
const LAST = `q.id * ${QUEUE_RANGE} + ${QUEUE_RANGE - 1}`;
/** The highest sequence queue `q` ever used: present, or deleted from the top (its range's start if none). */
const LAST_SEQUENCE =
  `max(ifnull((SELECT max(sequence) FROM stratus_messages WHERE sequence BETWEEN ${FIRST} AND ${LAST}), ` +
  `${FIRST}), q.highest_deleted)`;

/** `rankOf` in SQL, for rows released in bulk; the parameter is the policy's step. Same arithmetic as rankOf. */
const RANK_FROM_DUE = `due_at + (${MAX_PRIORITY} - priority) * ?`;

export const SQL = {
  queue: 'SELECT id, settings FROM stratus_queues WHERE name = ?',
  updateQueue: 'UPDATE stratus_queues SET settings = ? WHERE name = ?',
  /** The lowest free queue id, so ids (and with them sequence ranges) stay few however many queues come and go. */
  freeQueueId:
    'SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM stratus_queues WHERE id = 1) THEN 1 ELSE ' +
    '(SELECT min(id) + 1 FROM stratus_queues q WHERE NOT EXISTS ' +
    '(SELECT 1 FROM stratus_queues r WHERE r.id = q.id + 1)) END AS id',
  insertQueue: 'INSERT INTO stratus_queues (id, name, settings) VALUES (?, ?, ?)',
  listQueues: 'SELECT name FROM stratus_queues',
  /** What a watcher in another process compares: the signal, and the highest sequence (moved by sends). */
  queueSignal:
    "SELECT q.signal || ':' || ifnull((SELECT max(sequence) FROM stratus_messages " +
    `WHERE sequence BETWEEN ${FIRST} AND ${LAST}), 0) AS signal FROM stratus_queues q WHERE q.name = ?`,
  bumpSignal: 'UPDATE stratus_queues SET signal = signal + 1 WHERE id = ?',
  lastSequence: `SELECT ${LAST_SEQUENCE} AS last FROM stratus_queues q WHERE q.id = ?`,
  /** The queue, and the sequence to count on from, in one statement: a single send does little else. */
  sendQueue: `SELECT q.id, q.settings, ${LAST_SEQUENCE} AS last FROM stratus_queues q WHERE q.name = ?`,
  highestSequence: 'SELECT max(sequence) AS highest FROM stratus_messages WHERE sequence BETWEEN ? AND ?',
  highestDead:
    'SELECT max(sequence) AS highest FROM stratus_messages WHERE queue = ? AND dead_at IS NOT NULL',
  rememberDeleted: 'UPDATE stratus_queues SET highest_deleted = ? WHERE id = ? AND highest_deleted < ?',
  deleteQueue: 'DELETE FROM stratus_queues WHERE id = ?',
  deleteMessages: 'DELETE FROM stratus_messages WHERE sequence BETWEEN ? AND ?',
  deleteDead: 'DELETE FROM stratus_messages WHERE queue = ? AND dead_at IS NOT NULL',
  deleteDuplicates: 'DELETE FROM stratus_duplicates WHERE queue = ?',
  deleteSessions: 'DELETE FROM stratus_sessions WHERE queue = ?',

  /** Changes 1 when the id is new or its window ended (the window restarts), 0 for a duplicate. */
  recordId:
    'INSERT INTO stratus_duplicates (queue, id, expires_at) VALUES (?, ?, ?) ' +
    'ON CONFLICT (queue, id) DO UPDATE SET expires_at = excluded.expires_at WHERE expires_at <= ?',
  sweepEnd: `SELECT queue, id FROM stratus_duplicates WHERE (queue, id) > (?, ?) ORDER BY queue, id LIMIT 1 OFFSET ${SWEEP_SIZE - 1}`,
  sweepSlice:
    'DELETE FROM stratus_duplicates WHERE (queue, id) > (?, ?) AND (queue, id) <= (?, ?) AND expires_at <= ?',
  sweepRest: 'DELETE FROM stratus_duplicates WHERE (queue, id) > (?, ?) AND expires_at <= ?',
  insert:
    'INSERT INTO stratus_messages (sequence, queue, state, rank, due_at, available_at, expires_at, enqueued_at, ' +
    'priority, session, id, session_id, content_type, correlation_id, reply_to, subject, headers, body) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  sessionHead:
    'SELECT 1 AS busy FROM stratus_messages WHERE queue = ? AND session = ? AND session IS NOT NULL ' +
    "AND state IN ('available', 'scheduled', 'locked') LIMIT 1",
  /** Whether a dead letter holds the session (QueueSettings.onSessionDeadLetter). */
  sessionHeld:
    'SELECT 1 AS held FROM stratus_messages WHERE queue = ? AND session = ? AND holds_session IS NOT NULL LIMIT 1',
  heldSessions: 'SELECT DISTINCT session FROM stratus_messages WHERE queue = ? AND holds_session IS NOT NULL',
  heldBefore:
    'SELECT 1 AS busy FROM stratus_messages WHERE queue = ? AND session = ? ' +
    "AND state IN ('available', 'scheduled', 'locked') AND sequence < ? LIMIT 1",
  /** The waiting messages right behind a session's head, for a receive that locks them with it. */
  followers: `SELECT ${MESSAGE_COLUMNS} FROM stratus_messages WHERE queue = ? AND session = ? AND state = 'waiting' ORDER BY sequence ${SQLITE_LIMIT}`,
  releaseFollowers:
    "UPDATE stratus_messages SET state = 'waiting', rank = NULL, due_at = NULL, lock_token = NULL " +
    "WHERE queue = ? AND session = ? AND state = 'locked' AND sequence > ?",
  toWaiting:
    "UPDATE stratus_messages SET state = 'waiting', rank = NULL, due_at = NULL, lock_token = NULL WHERE sequence = ?",
  nextWaiting:
    'SELECT sequence, available_at, priority FROM stratus_messages ' +
    "WHERE queue = ? AND session = ? AND state = 'waiting' ORDER BY sequence LIMIT 1",
  makeDeliverable:
    'UPDATE stratus_messages SET state = ?, available_at = ?, rank = ?, due_at = ?, lock_token = NULL WHERE sequence = ?',

  /** Read without the write lock: is there anything for receive to do? */
  probe:
    'SELECT EXISTS (SELECT 1 FROM stratus_messages ' +
    "WHERE queue = q.id AND state = 'available') AS available, " +
    "(SELECT min(due_at) FROM stratus_messages WHERE queue = q.id AND state = 'scheduled') AS scheduled, " +
    "(SELECT min(due_at) FROM stratus_messages WHERE queue = q.id AND state = 'locked') AS locked " +
    'FROM stratus_queues q WHERE q.name = ?',
  nextDue:
    "SELECT (SELECT min(due_at) FROM stratus_messages WHERE queue = ? AND state = 'scheduled') AS scheduled, " +
    "(SELECT min(due_at) FROM stratus_messages WHERE queue = ? AND state = 'locked') AS locked",
  killExpiredScheduled:
    "UPDATE stratus_messages SET state = 'dead', dead_reason = ?, dead_description = NULL, dead_at = ?, " +
    "due_at = NULL WHERE queue = ? AND state = 'scheduled' AND due_at <= ? AND expires_at <= ? RETURNING session",
  releaseScheduled:
    `UPDATE stratus_messages SET state = 'available', rank = ${RANK_FROM_DUE}, due_at = NULL ` +
    "WHERE queue = ? AND state = 'scheduled' AND due_at <= ?",
  killExhaustedLocks:
    "UPDATE stratus_messages SET state = 'dead', dead_reason = ?, dead_description = NULL, dead_at = ?, " +
    "due_at = NULL, lock_token = NULL WHERE queue = ? AND state = 'locked' AND due_at <= ? " +
    'AND delivery_count >= ? AND session IS NULL',
  releaseLocks:
    `UPDATE stratus_messages SET state = 'available', available_at = due_at, rank = ${RANK_FROM_DUE}, ` +
    "due_at = NULL, lock_token = NULL WHERE queue = ? AND state = 'locked' AND due_at <= ? AND session IS NULL",
  /** Session messages go back one at a time, in order (SqliteMessageBackend.#unlock). */
  expiredSessionLocks:
    'SELECT sequence, lock_token, due_at, delivery_count, priority, session FROM stratus_messages ' +
    "WHERE queue = ? AND state = 'locked' AND due_at <= ? AND session IS NOT NULL ORDER BY sequence",
  pick: `SELECT ${MESSAGE_COLUMNS} FROM stratus_messages WHERE queue = ? AND state = 'available' ORDER BY rank, sequence ${SQLITE_LIMIT}`,
  lock:
    "UPDATE stratus_messages SET state = 'locked', delivery_count = delivery_count + 1, lock_token = ?, " +
    'due_at = ? WHERE sequence = ?',
  kill:
    "UPDATE stratus_messages SET state = 'dead', dead_reason = ?, dead_description = ?, dead_at = ?, rank = NULL, " +
    'due_at = NULL, lock_token = NULL, holds_session = ? WHERE sequence = ?',

  renew:
    'UPDATE stratus_messages SET due_at = ? ' +
    "WHERE sequence = ? AND queue = ? AND state = 'locked' AND lock_token = ?",
  complete:
    'DELETE FROM stratus_messages ' +
    "WHERE sequence = ? AND queue = ? AND state = 'locked' AND lock_token = ? RETURNING session",
  locked:
    'SELECT delivery_count, priority, session FROM stratus_messages ' +
    "WHERE sequence = ? AND queue = ? AND state = 'locked' AND lock_token = ?",

  peek:
    `SELECT ${MESSAGE_COLUMNS} FROM stratus_messages ` +
    `WHERE sequence > ? AND sequence <= ? AND dead_at IS NULL ORDER BY sequence ${SQLITE_LIMIT}`,
  deadLetters:
    `SELECT ${MESSAGE_COLUMNS}, holds_session FROM stratus_messages ` +
    `WHERE queue = ? AND dead_at IS NOT NULL AND sequence > ? ORDER BY sequence ${SQLITE_LIMIT}`,
  deadLetter:
    'SELECT sequence, priority, session FROM stratus_messages ' +
    'WHERE queue = ? AND sequence = ? AND dead_at IS NOT NULL',
  resend:
    'UPDATE stratus_messages SET state = ?, available_at = ?, rank = ?, due_at = ?, delivery_count = 0, ' +
    'dead_reason = NULL, dead_description = NULL, dead_at = NULL, holds_session = NULL WHERE sequence = ?',
  purgeOne:
    'DELETE FROM stratus_messages WHERE queue = ? AND sequence = ? AND dead_at IS NOT NULL ' +
    'RETURNING session, holds_session',
  stats:
    "SELECT (SELECT count(*) FROM stratus_messages WHERE queue = ? AND state = 'available') AS available, " +
    "(SELECT count(*) FROM stratus_messages WHERE queue = ? AND state = 'scheduled') AS scheduled, " +
    "(SELECT count(*) FROM stratus_messages WHERE queue = ? AND state = 'locked') AS locked, " +
    "(SELECT count(*) FROM stratus_messages WHERE queue = ? AND state = 'waiting') AS waiting, " +
    '(SELECT count(*) FROM stratus_messages WHERE queue = ? AND dead_at IS NOT NULL) AS dead, ' +
    '(SELECT enqueued_at FROM stratus_messages WHERE sequence BETWEEN ? AND ? AND dead_at IS NULL ' +
    'ORDER BY sequence LIMIT 1) AS oldest',

  sessionState: 'SELECT state FROM stratus_sessions WHERE queue = ? AND session = ?',
  putSessionState:
    'INSERT INTO stratus_sessions (queue, session, state) VALUES (?, ?, ?) ' +
    'ON CONFLICT (queue, session) DO UPDATE SET state = excluded.state',
  clearSessionState: 'DELETE FROM stratus_sessions WHERE queue = ? AND session = ?',

  topic: 'SELECT retention_ms FROM stratus_topics WHERE name = ?',
  putTopic:
    'INSERT INTO stratus_topics (name, retention_ms) VALUES (?, ?) ' +
    'ON CONFLICT (name) DO UPDATE SET retention_ms = excluded.retention_ms',
  listTopics: 'SELECT name FROM stratus_topics',
  deleteTopic: 'DELETE FROM stratus_topics WHERE name = ?',
  deleteRetained: 'DELETE FROM stratus_retained WHERE topic = ?',
  retain:
    'INSERT INTO stratus_retained (topic, published_at, id, available_at, expires_at, priority, session_id, ' +
    'content_type, correlation_id, reply_to, subject, headers, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  pruneRetained: 'DELETE FROM stratus_retained WHERE topic = ? AND published_at <= ?',
  replay:
    'SELECT r.topic, r.id, r.available_at, r.expires_at, r.priority, r.session_id, r.content_type, ' +
    'r.correlation_id, r.reply_to, r.subject, r.headers, r.body FROM stratus_retained r ' +
    'JOIN stratus_topics t ON t.name = r.topic ' +
    'WHERE r.published_at >= ? AND r.published_at + t.retention_ms > ? ORDER BY r.pk',
  subscribe:
    'INSERT INTO stratus_subscriptions (queue, topics, filter) VALUES (?, ?, ?) ' +
    'ON CONFLICT (queue) DO UPDATE SET topics = excluded.topics, filter = excluded.filter',
  unsubscribe: 'DELETE FROM stratus_subscriptions WHERE queue = ?',
  subscriptions: 'SELECT queue, topics, filter FROM stratus_subscriptions ORDER BY rowid',
} as const;
