/**
 * The messaging tables, as migrations for `migrateSqlite(database, 'messaging', MESSAGING_MIGRATIONS)`.
 *
 * A commit costs about one WAL page write per B-tree page it changes, so the layout keeps that number small:
 * - a message's sequence is its rowid, and each queue owns the range [id * 2^32, id * 2^32 + 2^32): the table
 *   itself is ordered by (queue, sequence), so peeking, the oldest message and the highest sequence need no
 *   index, and every index ends with the rowid, so `(queue, rank)` breaks rank ties by sequence;
 * - the partial indexes hold only the rows their query reads: a send touches the table and `available` (or
 *   `scheduled`/`waiting`); a lock moves a row from `available` to `locked`; a complete leaves the table and
 *   `locked`;
 * - lock tokens embed the sequence, so settling needs no token index;
 * - duplicate ids have no expiry index (it would cost a page per send, and pruning two more): the backend sweeps
 *   the table in key order a slice at a time.
 */
export const MESSAGING_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE stratus_queues (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    settings TEXT NOT NULL,
    -- Sequences only grow: a new message gets one above both the highest present and the highest deleted.
    highest_deleted INTEGER NOT NULL DEFAULT 0,
    -- Bumped when messages become available other than by being sent (abandon, resend, next in session), for
    -- watchers in other processes; sends show as a new highest sequence.
    signal INTEGER NOT NULL DEFAULT 0
  );

  CREATE TABLE stratus_messages (
    sequence INTEGER PRIMARY KEY,
    queue INTEGER NOT NULL,
    state TEXT NOT NULL,
    -- Ordering key while available (rankOf).
    rank REAL,
    -- When a scheduled message becomes due (its availableAt) or a locked one's lock expires (its lockedUntil).
    due_at INTEGER,
    available_at INTEGER NOT NULL,
    delivery_count INTEGER NOT NULL DEFAULT 0,
    lock_token TEXT,
    expires_at INTEGER,
    enqueued_at INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    -- The session that orders this message (NULL when the queue had no sessions when it was sent).
    session TEXT,
    id TEXT NOT NULL,
    session_id TEXT,
    content_type TEXT,
    correlation_id TEXT,
    reply_to TEXT,
    subject TEXT,
    headers TEXT,
    dead_reason TEXT,
    dead_description TEXT,
    dead_at INTEGER,
    -- Last, so the columns above stay on the row's first page.
    body BLOB NOT NULL
  );
  CREATE INDEX stratus_messages_dead ON stratus_messages (queue) WHERE dead_at IS NOT NULL;
  CREATE INDEX stratus_messages_available ON stratus_messages (queue, rank) WHERE state = 'available';
  CREATE INDEX stratus_messages_scheduled ON stratus_messages (queue, due_at) WHERE state = 'scheduled';
  CREATE INDEX stratus_messages_locked ON stratus_messages (queue, due_at) WHERE state = 'locked';
  CREATE INDEX stratus_messages_waiting ON stratus_messages (queue, session) WHERE state = 'waiting';
  -- A session's head: its one message that is available, scheduled or locked.
  CREATE INDEX stratus_messages_head ON stratus_messages (queue, session)
    WHERE session IS NOT NULL AND state IN ('available', 'scheduled', 'locked');

  -- Message ids seen within each queue's duplicate window.
  CREATE TABLE stratus_duplicates (
    queue INTEGER NOT NULL,
    id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (queue, id)
  ) WITHOUT ROWID;

  CREATE TABLE stratus_sessions (
    queue INTEGER NOT NULL,
    session TEXT NOT NULL,
    state BLOB NOT NULL,
    PRIMARY KEY (queue, session)
  );

  CREATE TABLE stratus_topics (
    name TEXT PRIMARY KEY,
    retention_ms INTEGER NOT NULL
  );

  -- Keyed by queue name; the rowid keeps subscription order (ON CONFLICT DO UPDATE keeps it on rebinding).
  CREATE TABLE stratus_subscriptions (
    queue TEXT NOT NULL UNIQUE,
    topics TEXT NOT NULL,
    filter TEXT
  );

  -- Published messages kept for replay into new subscriptions, while their topic's retention lasts.
  CREATE TABLE stratus_retained (
    pk INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    published_at INTEGER NOT NULL,
    id TEXT NOT NULL,
    available_at INTEGER,
    expires_at INTEGER,
    priority INTEGER,
    session_id TEXT,
    content_type TEXT,
    correlation_id TEXT,
    reply_to TEXT,
    subject TEXT,
    headers TEXT,
    body BLOB NOT NULL
  );
  CREATE INDEX stratus_retained_topic ON stratus_retained (topic, published_at);
  `,
  // 2: a dead letter that holds its session (QueueSettings.onSessionDeadLetter) has holds_session = 1. The index
  // holds only those, so asking whether a session is held costs a seek in a (mostly empty) index.
  `
  ALTER TABLE stratus_messages ADD COLUMN holds_session INTEGER;
  CREATE INDEX stratus_messages_holding ON stratus_messages (queue, session) WHERE holds_session IS NOT NULL;
  `,
];
