import { DEAD_LETTER_EXPIRED, DEAD_LETTER_MAX_DELIVERIES, MAX_PRIORITY } from '../backend.js';

/**
 * The Lua scripts of the Redis backend: every operation is one script call, atomic on the server.
 *
 * Keys of a queue share the hash tag `{name}` (one cluster slot): `<prefix>q:{name}:<kind>` where kind is one
 * letter, so no queue name can reach another queue's keys:
 *   m  hash   settings (step, maxd, dupw, ttl, sess, hold, json) and the sequence counter `seq`
 *   r  hash   `<sequence>` -> state record (RECORD_FORMAT) and `<sequence>p` -> payload (the properties as JSON, a
 *             NUL byte, the body bytes, as the client wrote them), for live and dead messages; sequences are
 *             16-digit strings everywhere. A message of a bulk send has no payload field: its record ends with a
 *             reference to its bytes in a blob (BLOB_REF_FORMAT)
 *   b<name>  string  a blob: the payloads of consecutive messages of one send, back to back, written by the client
 *             (SET NX with a TTL) just before the send script, which claims it (PERSIST) or deletes it; `name` is
 *             made by the client, unique per blob. Readers take a message's bytes with GETRANGE
 *   g  hash   blob name -> how many messages (live or dead) still refer to that blob; the last one to go deletes
 *             it, and deleting the queue deletes every blob listed here
 *   a  zset   available messages by rank (members are 16-digit sequences, so equal ranks sort by sequence)
 *   u  zset   scheduled messages by availableAt
 *   k  zset   locked messages by lockedUntil
 *   l  zset   live messages (not completed, not dead) by sequence: peek and the oldest age
 *   x  zset   dead letters by sequence
 *   d  zset   message ids seen within the duplicate window, by the time they are forgotten
 *   w  zset   waiting session messages, members `<sessionId> NUL <sequence>` at score 0 (by session, then sequence)
 *   f  zset   session messages locked behind their head by a session-batch receive, members as in w
 *   h  hash   session id -> sequence of its head (the one available, scheduled or locked message)
 *   o  zset   dead letters that hold their session (QueueSettings.onSessionDeadLetter), members as in w
 *   c  hash   session id -> session state
 *   n         the pub/sub channel that wakes watchers
 * Shared keys: `<prefix>queues` (set of names), `<prefix>topics` (hash of settings JSON), `<prefix>subscriptions`
 * (hash queue -> JSON), retained messages in `<prefix>retained` (payloads), `<prefix>retained:meta`,
 * `<prefix>retained:next` (id counter) and one zset per topic `<prefix>retained:t:<topic>` (ids by time).
 *
 * Times are doubles formatted with %.17g (Lua's default tostring keeps only 14 digits, too few for ranks).
 */

/**
 * A message's state record, packed with Lua's struct library (little-endian); the client reads it as is:
 *   u8 state (STATE_NAMES), u8 priority, u8 has session id, u8 has description,
 *   f64 availableAt, f64 deliveryCount, f64 lockedUntil, f64 expiresAt (Infinity: never), f64 enqueuedAt,
 *   f64 deadLetteredAt, then four strings as u32 length + UTF-8: lock token, session id, dead-letter reason and
 *   description ('' when absent).
 * The record of a message whose payload is in a blob continues with BLOB_REF_FORMAT: u32 offset, u32 length, then
 * the blob name as u32 length + bytes. Records without it (single sends, small batches, published messages, and
 * everything written before blobs existed) have a payload field.
 */
export const RECORD_FORMAT = '<BBBBddddddI4c0I4c0I4c0I4c0';
export const BLOB_REF_FORMAT = '<I4I4I4c0';
/**
 * The send script takes the payloads from blobs when the client sends at least this many messages at once: one
 * string per batch costs less than a hash field per payload, and above all its bytes never pass through Lua,
 * which copies and hashes every argument into a Lua string (about 1.5 ms of server time per MiB measured, the
 * largest single cost of a bulk send of 1 KiB messages). Below it the blob's own commands do not pay.
 */
export const BLOB_MIN_MESSAGES = 16;
export const RECORD_STRINGS_OFFSET = 52;
export const STATE_NAMES = ['', 'available', 'scheduled', 'locked', 'waiting', 'dead'] as const;

const CORE = String.raw`
local AVAILABLE, SCHEDULED, LOCKED, WAITING, DEAD = 1, 2, 3, 4, 5
-- Indexes into a decoded record.
local STATE, PRIORITY, HAS_SESSION, HAS_DESCRIPTION, AVAILABLE_AT, DELIVERIES, LOCKED_UNTIL, EXPIRES_AT,
  ENQUEUED_AT, DEAD_AT, TOKEN, SESSION, REASON, DESCRIPTION = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14
local RECORD = '${RECORD_FORMAT}'
local EXPIRED = ${JSON.stringify(DEAD_LETTER_EXPIRED)}
local MAX_DELIVERIES = ${JSON.stringify(DEAD_LETTER_MAX_DELIVERIES)}
local MAX_PRIORITY = ${MAX_PRIORITY}
-- Lua's unpack() takes a few thousand values at most: variadic commands go in chunks.
local CHUNK = 1000
-- Bounds the work one receive does on due, expired or dead messages; the rest waits for the next call.
local SWEEP_LIMIT = 10000
local BLOB_REF = '${BLOB_REF_FORMAT}'
-- A decoded record keeps its blob reference, packed as stored, after its fields (nil without one): re-encoding
-- a record appends it as is, and only the few places that need the blob unpack it.
local REF = 15

local function fmt(n) return string.format('%.17g', n) end
local function pad(n) return string.format('%016d', n) end
local function payload_field(seq) return seq .. 'p' end

local function each_chunk(list, fn)
  local total = #list
  for i = 1, total, CHUNK do fn(unpack(list, i, math.min(i + CHUNK - 1, total))) end
end

local function call_all(command, key, list)
  each_chunk(list, function(...) redis.call(command, key, ...) end)
end

local function fetch_all(command, key, list)
  if #list <= CHUNK then return redis.call(command, key, unpack(list)) end
  local out = {}
  each_chunk(list, function(...)
    local part = redis.call(command, key, ...)
    for i = 1, #part do out[#out + 1] = part[i] end
  end)
  return out
end

-- The record and the payload field of each message, interleaved: {record 1, payload 1, record 2, ...}.
local function records_and_payloads(q, seqs)
  local fields = {}
  for i = 1, #seqs do
    fields[2 * i - 1] = seqs[i]
    fields[2 * i] = payload_field(seqs[i])
  end
  return fetch_all('HMGET', q.base .. 'r', fields)
end

local function decode(raw)
  local r = {struct.unpack(RECORD, raw)}
  -- struct.unpack ends with the position after what it read (slot REF, so the table never grows): the blob
  -- reference starts there, if the record has one.
  local after = r[REF]
  r[REF] = after <= #raw and string.sub(raw, after) or nil
  return r
end

local function encode(r)
  local raw = struct.pack(RECORD, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], #r[11], r[11],
    #r[12], r[12], #r[13], r[13], #r[14], r[14])
  if r[REF] then return raw .. r[REF] end
  return raw
end

local function open_queue(base)
  local m = redis.call('HMGET', base .. 'm', 'step', 'maxd', 'dupw', 'ttl', 'sess', 'hold')
  if not m[1] then return nil end
  return {
    base = base, step = tonumber(m[1]), maxd = tonumber(m[2]), dupw = tonumber(m[3]), ttl = tonumber(m[4]),
    -- Queues stored before onSessionDeadLetter existed have no 'hold' field: they get its default, 'hold'.
    sessions = m[5] == '1', hold = m[6] ~= '0', writes = {}, order = {}, wake = false,
  }
end

local function open_or_fail()
  local q = open_queue(string.sub(KEYS[1], 1, -2))
  if not q then error({err = 'STRATUS_UNKNOWN_QUEUE'}) end
  return q
end

-- Writes are collected per command and key and sent as variadic commands by flush(), unless q.direct: then they
-- go at once. Operations on one message set it (a send, receive, completion, renewal...): their few writes would
-- pay more for the collecting than variadic calls save. Going at once is always right; collecting relies on no
-- read before flush() needing what was put.
local function put(q, command, kind, a, b)
  if q.direct then
    if b ~= nil then redis.call(command, q.base .. kind, a, b) else redis.call(command, q.base .. kind, a) end
    return
  end
  local by_kind = q.writes[command]
  if not by_kind then
    by_kind = {}
    q.writes[command] = by_kind
  end
  local list = by_kind[kind]
  if not list then
    list = {}
    by_kind[kind] = list
    q.order[#q.order + 1] = {command, q.base .. kind, list}
  end
  local n = #list
  list[n + 1] = a
  if b ~= nil then list[n + 2] = b end
end

local function flush(q)
  for i = 1, #q.order do
    local o = q.order[i]
    call_all(o[1], o[2], o[3])
  end
  q.writes = {}
  q.order = {}
end

local function finish(q)
  flush(q)
  -- Blobs whose last message has gone (see drop) are deleted.
  if q.dropped then
    local counts = q.base .. 'g'
    for blob, n in pairs(q.dropped) do
      if redis.call('HINCRBY', counts, blob, -n) <= 0 then
        redis.call('HDEL', counts, blob)
        redis.call('UNLINK', q.base .. 'b' .. blob)
      end
    end
    q.dropped = nil
  end
  if q.wake then redis.call('PUBLISH', q.base .. 'n', '') end
end

local function load(q, seq)
  local raw = redis.call('HGET', q.base .. 'r', seq)
  return raw and decode(raw)
end

-- Returns the packed record.
local function save(q, seq, r)
  local raw = encode(r)
  put(q, 'HSET', 'r', seq, raw)
  return raw
end

local function deliverable(q, seq, r, at, now)
  r[AVAILABLE_AT] = at
  r[LOCKED_UNTIL] = 0
  r[TOKEN] = ''
  if at > now then
    r[STATE] = SCHEDULED
    put(q, 'ZADD', 'u', fmt(at), seq)
  else
    r[STATE] = AVAILABLE
    -- Messages of one batch mostly share their rank: format it once.
    local rank = at + (MAX_PRIORITY - r[PRIORITY]) * q.step
    if rank ~= q.rank then
      q.rank = rank
      q.rank_text = fmt(rank)
    end
    put(q, 'ZADD', 'a', q.rank_text, seq)
    q.wake = true
  end
  save(q, seq, r)
end

-- The first member of a session in a zset of members '<sessionId> NUL <sequence>' (w, f, o), or nil.
local function first_of(q, kind, sid)
  return redis.call('ZRANGEBYLEX', q.base .. kind, '[' .. sid .. '\0', '(' .. sid .. '\1', 'LIMIT', 0, 1)[1]
end

-- The session has no head: its waiting message with the lowest sequence becomes the head, unless a dead letter
-- holds the session (then it has none until that dead letter is resent or purged).
local function promote(q, sid, now)
  local member = not first_of(q, 'o', sid) and first_of(q, 'w', sid)
  if not member then
    redis.call('HDEL', q.base .. 'h', sid)
    return
  end
  redis.call('ZREM', q.base .. 'w', member)
  local next_seq = string.sub(member, -16)
  redis.call('HSET', q.base .. 'h', sid, next_seq)
  local nr = load(q, next_seq)
  deliverable(q, next_seq, nr, math.max(nr[AVAILABLE_AT], now), now)
end

-- The session's head left (completed or dead): the message locked behind it, if any, takes its place, else the
-- session goes on (promote). A message locked behind a head that leaves just stops being one.
local function advance(q, seq, r, now)
  if r[HAS_SESSION] == 0 then return end
  local sid = r[SESSION]
  redis.call('ZREM', q.base .. 'f', sid .. '\0' .. seq)
  local heads = q.base .. 'h'
  if redis.call('HGET', heads, sid) ~= seq then return end
  local follower = first_of(q, 'f', sid)
  if follower then
    redis.call('HSET', heads, sid, string.sub(follower, -16))
    return
  end
  promote(q, sid, now)
end

-- A dead letter stopped holding the session (resent or purged): with no head, the session goes on (promote).
local function resume(q, sid, now)
  if redis.call('HEXISTS', q.base .. 'h', sid) == 0 then promote(q, sid, now) end
end

-- The messages locked behind seq in its session go back to waiting, their locks lost, and seq itself too when
-- itself is true (a follower whose lock is gone). The caller has not taken them out of k. They are marked in
-- q.released (per call: a function library keeps its top-level values from one call to the next).
local function back_to_waiting(q, seq, r, itself)
  if r[HAS_SESSION] == 0 then return end
  local released = q.released or {}
  q.released = released
  local sid = r[SESSION]
  local behind = q.base .. 'f'
  local function wait(member, fseq, fr)
    -- Marked, so a sweep that fetched its record before does not release it again.
    released[fseq] = true
    fr[STATE] = WAITING
    fr[LOCKED_UNTIL] = 0
    fr[TOKEN] = ''
    redis.call('ZREM', behind, member)
    redis.call('ZADD', q.base .. 'w', 0, member)
    put(q, 'ZREM', 'k', fseq)
    save(q, fseq, fr)
  end
  if itself then wait(sid .. '\0' .. seq, seq, r) end
  local members = redis.call('ZRANGEBYLEX', behind, '(' .. sid .. '\0' .. seq, '(' .. sid .. '\1')
  for i = 1, #members do
    local fseq = string.sub(members[i], -16)
    wait(members[i], fseq, load(q, fseq))
  end
end

-- The caller has taken the message out of a, u or k. A dead letter that holds its session (holdsSession in
-- backend.ts) is listed in o, and the messages locked behind it go back to waiting.
local function kill(q, seq, r, reason, description, now)
  if q.sessions and q.hold and r[HAS_SESSION] == 1 and reason ~= EXPIRED then
    back_to_waiting(q, seq, r, false)
    redis.call('ZADD', q.base .. 'o', 0, r[SESSION] .. '\0' .. seq)
  end
  r[STATE] = DEAD
  r[LOCKED_UNTIL] = 0
  r[TOKEN] = ''
  r[REASON] = reason
  r[HAS_DESCRIPTION] = description and 1 or 0
  r[DESCRIPTION] = description or ''
  r[DEAD_AT] = now
  save(q, seq, r)
  put(q, 'ZREM', 'l', seq)
  put(q, 'ZADD', 'x', seq, seq)
  advance(q, seq, r, now)
end

-- A new or resent message joins the live set: behind its session's head, or deliverable.
local function enter(q, seq, r, at, now)
  if r[HAS_SESSION] == 1 then
    local sid = r[SESSION]
    local heads = q.base .. 'h'
    if redis.call('HEXISTS', heads, sid) == 1 or first_of(q, 'o', sid) then
      r[STATE] = WAITING
      r[AVAILABLE_AT] = at
      redis.call('ZADD', q.base .. 'w', 0, sid .. '\0' .. seq)
      save(q, seq, r)
      return
    end
    redis.call('HSET', heads, sid, seq)
  end
  deliverable(q, seq, r, at, now)
end

-- Messages from ARGV[from] on: a JSON array of [id, availableAt, expiresAt, priority, sessionId] (false when
-- absent), then one payload per message. Returns {id, availableAt, expiresAt, priority, sessionId, payload} each.
local function read_messages(from)
  local list = cjson.decode(ARGV[from])
  for i = 1, #list do list[i][6] = ARGV[from + i] end
  return list
end

-- Stores messages in order, applying the duplicate window, default TTL and session gating. Payloads are each
-- message's m[6], or in blobs (see SEND). Returns each message's sequence, 0 for a duplicate.
local function store(q, messages, now, blobs)
  local result = {}
  local accepted = {}
  local seen_key = q.base .. 'd'
  local forget_at = q.dupw > 0 and fmt(now + q.dupw)
  if q.dupw > 0 and #messages == 1 then
    -- A single message (the common case): ZADD NX tests and records its id in one command.
    local id = messages[1][1]
    if redis.call('ZADD', seen_key, 'NX', forget_at, id) == 0 then
      if tonumber(redis.call('ZSCORE', seen_key, id)) > now then return {0} end
      redis.call('ZADD', seen_key, forget_at, id)
    end
    accepted[1] = 1
  elseif q.dupw > 0 and #messages > 0 then
    local ids = {}
    for i = 1, #messages do ids[i] = messages[i][1] end
    local seen = fetch_all('ZMSCORE', seen_key, ids)
    local in_batch = {}
    for i = 1, #messages do
      local id = ids[i]
      -- Ids whose window has passed may still be listed (see the pruning below).
      if (seen[i] and tonumber(seen[i]) > now) or in_batch[id] then
        result[i] = 0
      else
        in_batch[id] = true
        accepted[#accepted + 1] = i
        put(q, 'ZADD', 'd', forget_at, id)
      end
    end
  else
    for i = 1, #messages do accepted[i] = i end
  end
  if blobs then
    -- What becomes of each blob, now that duplicates are known: kept (claimed, with a reference count) when its
    -- accepted messages fill at least half of it, so duplicates' bytes never cost more than the payloads kept;
    -- else the accepted payloads (few, if any) get fields of their own and the blob is deleted below. A blob may
    -- be claimed already: after a dropped connection ioredis sends unanswered commands again, so the same SET NX
    -- and script can run twice. Its count then grows, and a blob claimed before is never deleted here.
    for k = 1, #accepted do
      local i = accepted[k]
      local blob = blobs.owner[i]
      blob.kept = blob.kept + 1
      blob.kept_bytes = blob.kept_bytes + messages[i][6]
    end
    for _, blob in ipairs(blobs.list) do
      blob.key = q.base .. 'b' .. blob.name
      blob.keep = blob.kept > 0 and 2 * blob.kept_bytes >= blob.size
      if blob.keep then
        redis.call('PERSIST', blob.key)
        redis.call('HINCRBY', q.base .. 'g', blob.name, blob.kept)
      elseif redis.call('HEXISTS', q.base .. 'g', blob.name) == 0 then
        blob.unclaimed = true
      end
    end
  end
  if #accepted > 0 then
    local last = redis.call('HINCRBY', q.base .. 'm', 'seq', #accepted)
    local first = last - #accepted
    -- Forgetting ids is housekeeping: done about once per 64 messages stored.
    if q.dupw > 0 and math.floor(last / 64) ~= math.floor(first / 64) then
      redis.call('ZREMRANGEBYSCORE', seen_key, '-inf', fmt(now))
    end
    local default_expiry = q.ttl and now + q.ttl or math.huge
    for k = 1, #accepted do
      local i = accepted[k]
      local m = messages[i]
      local n = first + k
      local seq = pad(n)
      result[i] = n
      local session = q.sessions and m[5]
      local r = {
        AVAILABLE, m[4], session and 1 or 0, 0, now, 0, 0, m[3] or default_expiry, now, 0, '', session or '', '', '',
        false,
      }
      local blob = blobs and blobs.owner[i]
      if not blob then
        put(q, 'HSET', 'r', payload_field(seq), m[6])
      elseif blob.keep then
        r[REF] = struct.pack(BLOB_REF, blobs.at[i], m[6], #blob.name, blob.name)
      else
        local at = blobs.at[i]
        put(q, 'HSET', 'r', payload_field(seq), redis.call('GETRANGE', blob.key, at, at + m[6] - 1))
      end
      put(q, 'ZADD', 'l', seq, seq)
      enter(q, seq, r, m[2] or now, now)
    end
  end
  if blobs then
    for _, blob in ipairs(blobs.list) do
      if blob.unclaimed then redis.call('UNLINK', blob.key) end
    end
  end
  return result
end

-- The sequence and record locked under token, or nil when that delivery no longer holds the message.
local function locked_by(q, token)
  local seq = string.sub(token, 1, 16)
  local r = load(q, seq)
  if not r or r[STATE] ~= LOCKED or r[TOKEN] ~= token then return nil end
  return seq, r
end

`;

/** Reading payloads, from fields or blobs: receive, peek and the dead-letter listing. */
const BLOB_READ = `
-- Appends the payload slots of messages to a reply. A message with a payload field gets that payload. Those in
-- blobs go out in chunks: consecutive messages whose bytes lie back to back in one blob share one GETRANGE (only
-- their bytes, never the whole blob), the chunk in the first one's slot and 0 in the others'; the client cuts
-- them apart with the offsets and lengths in their records. Returns add(field, decoded record) and close(),
-- which must run before the reply is returned.
local function payload_writer(q, reply)
  local chunk
  local function close()
    if not chunk then return end
    reply[chunk.slot] = chunk.to > chunk.from
      and redis.call('GETRANGE', q.base .. 'b' .. chunk.blob, chunk.from, chunk.to - 1) or ''
    chunk = nil
  end
  local function add(field, r)
    if field or not r[REF] then
      reply[#reply + 1] = field
      return
    end
    local offset, length, blob = struct.unpack(BLOB_REF, r[REF])
    reply[#reply + 1] = 0
    if chunk and chunk.blob == blob and chunk.to == offset then
      chunk.to = offset + length
    else
      close()
      chunk = {slot = #reply, blob = blob, from = offset, to = offset + length}
    end
  end
  return add, close
end

-- The sequence, record and payload slot (payload_writer) of each message: what peek and the dead-letter listing
-- return.
local function listing(q, seqs)
  if #seqs == 0 then return {} end
  local values = records_and_payloads(q, seqs)
  local reply = {}
  local add_payload, close_payloads = payload_writer(q, reply)
  for i = 1, #seqs do
    local record, payload = values[2 * i - 1], values[2 * i]
    reply[#reply + 1] = tonumber(seqs[i])
    reply[#reply + 1] = record
    add_payload(payload, not payload and decode(record))
  end
  close_payloads()
  return reply
end
`;

/** Removing messages for good: complete and dead-letter purges. */
const BLOB_DROP = `
-- A message leaves for good (completed, or a dead letter purged): its record and payload go, and its blob, if it
-- has one, loses a reference (settled by finish()).
local function drop(q, seq, r)
  if not r[REF] then
    put(q, 'HDEL', 'r', seq, payload_field(seq))
    return
  end
  local _, _, blob = struct.unpack(BLOB_REF, r[REF])
  put(q, 'HDEL', 'r', seq)
  q.dropped = q.dropped or {}
  q.dropped[blob] = (q.dropped[blob] or 0) + 1
end
`;

/** Topic matching and filters, as in routing.ts (evaluated here so publish and replay stay one atomic call). */
const ROUTING = String.raw`
local function split_topic(s)
  local parts = {}
  for part in string.gmatch(s .. '.', '([^.]*)%.') do parts[#parts + 1] = part end
  return parts
end

local function segments_match(p, i, t, j)
  if i > #p then return j > #t end
  local segment = p[i]
  if segment == '#' then
    return segments_match(p, i + 1, t, j) or (j <= #t and segments_match(p, i, t, j + 1))
  end
  if j > #t then return false end
  return (segment == '*' or segment == t[j]) and segments_match(p, i + 1, t, j + 1)
end

local function topic_matches(pattern, topic)
  if not string.find(pattern, '[*#]') then return pattern == topic end
  return segments_match(split_topic(pattern), 1, split_topic(topic), 1)
end

local function any_topic_matches(patterns, topic)
  for i = 1, #patterns do
    if topic_matches(patterns[i], topic) then return true end
  end
  return false
end

local function contains(list, value)
  for i = 1, #list do
    if list[i] == value then return true end
  end
  return false
end

local function header_matches(value, condition)
  if type(condition) == 'string' then return value == condition end
  if condition.exists ~= nil then return (value ~= nil) == condition.exists end
  if condition.prefix ~= nil then
    return value ~= nil and string.sub(value, 1, #condition.prefix) == condition.prefix
  end
  return value ~= nil and contains(condition, value)
end

local function properties_of(payload)
  return cjson.decode(string.sub(payload, 1, string.find(payload, '\0', 1, true) - 1))
end

local function filter_matches(filter, payload)
  if filter == nil then return true end
  local props = properties_of(payload)
  if filter.subject ~= nil then
    local subject = props.subject
    if subject == nil then return false end
    if type(filter.subject) == 'string' then
      if subject ~= filter.subject then return false end
    elseif not contains(filter.subject, subject) then
      return false
    end
  end
  if filter.headers ~= nil then
    local headers = props.headers or {}
    for name, condition in pairs(filter.headers) do
      if not header_matches(headers[name], condition) then return false end
    end
  end
  return true
end

local function queue_base(prefix, name) return prefix .. 'q:{' .. name .. '}:' end

-- Drops a topic's retained messages published at or before cutoff.
local function prune_retained(prefix, topic, cutoff)
  local index = prefix .. 'retained:t:' .. topic
  local ids = redis.call('ZRANGEBYSCORE', index, '-inf', cutoff)
  if #ids == 0 then return end
  call_all('HDEL', prefix .. 'retained', ids)
  call_all('HDEL', prefix .. 'retained:meta', ids)
  call_all('ZREM', index, ids)
end

local function retention_of(settings) return tonumber(cjson.decode(settings).retentionMs) end
`;

const PUT_QUEUE = `
-- KEYS: queues, queue meta. ARGV: name, settings JSON, step, maxd, dupw, ttl, sess, hold
redis.call('HSET', KEYS[2], 'json', ARGV[2], 'step', ARGV[3], 'maxd', ARGV[4], 'dupw', ARGV[5], 'ttl', ARGV[6],
  'sess', ARGV[7], 'hold', ARGV[8])
redis.call('SADD', KEYS[1], ARGV[1])
return 1
`;

const DELETE_QUEUE = `
-- KEYS: queues, subscriptions, queue meta. ARGV: name
if redis.call('SREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
local base = string.sub(KEYS[3], 1, -2)
local keys = {}
for kind in string.gmatch('mrauklxdwfhcgo', '.') do keys[#keys + 1] = base .. kind end
-- Every blob still referred to is listed in g.
local blobs = redis.call('HKEYS', base .. 'g')
for i = 1, #blobs do keys[#keys + 1] = base .. 'b' .. blobs[i] end
for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
return 1
`;

const SEND = `
-- KEYS: queue meta. ARGV: now, 'payloads' then messages (see read_messages), or 'blobs', the routing JSON of
-- read_messages with each payload's length as a sixth element, then the blobs, which the client has just written
-- with SET NX PX. Returns sequences, 0 for duplicates.
local q = open_or_fail()
local now = tonumber(ARGV[1])
local result
if ARGV[2] == 'blobs' then
  -- The blobs of the send, from ARGV[4] on: name and message count per blob, in message order; each message's m[6]
  -- is its payload's length. Fails, before anything is written, when a blob is not there as the client wrote it.
  local messages = cjson.decode(ARGV[3])
  local blobs = {list = {}, owner = {}, at = {}}
  local i = 1
  for a = 4, #ARGV, 2 do
    local blob = {name = ARGV[a], size = 0, kept = 0, kept_bytes = 0}
    for _ = 1, tonumber(ARGV[a + 1]) do
      blobs.owner[i], blobs.at[i] = blob, blob.size
      blob.size = blob.size + messages[i][6]
      i = i + 1
    end
    if redis.call('STRLEN', q.base .. 'b' .. blob.name) ~= blob.size then
      error('STRATUS_BLOB_MISSING ' .. blob.name)
    end
    blobs.list[#blobs.list + 1] = blob
  end
  if i ~= #messages + 1 then error('STRATUS_BLOB_MISSING: the blobs do not hold every message') end
  result = store(q, messages, now, blobs)
else
  local messages = read_messages(3)
  q.direct = #messages == 1
  result = store(q, messages, now)
end
finish(q)
return result
`;

const RECEIVING = `
-- Locks up to max deliverable messages of q (and, with batch > 1, the waiting messages behind a session head) for
-- lock_ms. Returns {nextDueAt or false, then sequence, record and payload slot (payload_writer) per message}.
local function receive_messages(q, now, max, lock_ms, nonce, batch)
  local budget = SWEEP_LIMIT

  -- Due scheduled messages become available (or die expired); expired locks come back (or die, past the last
  -- delivery), ranked from when their lock ran out.
  -- Many at once after a crash or an outage: collected into variadic writes even when the caller writes directly.
  local direct = q.direct
  q.direct = false
  local now_text = fmt(now)
  local function sweep(kind, due)
    local seqs = redis.call('ZRANGEBYSCORE', q.base .. kind, '-inf', now_text, 'LIMIT', '0', budget)
    if #seqs == 0 then return end
    budget = budget - #seqs
    call_all('ZREM', q.base .. kind, seqs)
    local raws = fetch_all('HMGET', q.base .. 'r', seqs)
    for i = 1, #seqs do due(seqs[i], decode(raws[i])) end
  end
  sweep('u', function(seq, r)
    if r[EXPIRES_AT] <= now then
      kill(q, seq, r, EXPIRED, false, now)
    else
      deliverable(q, seq, r, r[AVAILABLE_AT], now)
    end
  end)
  sweep('k', function(seq, r)
    if q.released and q.released[seq] then return end
    -- Locked behind its session's head: back to waiting, with the ones behind it. A head takes them with it.
    if r[HAS_SESSION] == 1 and redis.call('HGET', q.base .. 'h', r[SESSION]) ~= seq then
      back_to_waiting(q, seq, r, true)
      return
    end
    back_to_waiting(q, seq, r, false)
    if r[DELIVERIES] >= q.maxd then
      kill(q, seq, r, MAX_DELIVERIES, false, now)
    else
      deliverable(q, seq, r, r[LOCKED_UNTIL], now)
    end
  end)
  flush(q)
  q.direct = direct

  local locked_until = now + lock_ms
  local locked_text = fmt(locked_until)
  local reply = {false}
  local add_payload, close_payloads = payload_writer(q, reply)
  local taken, behind = 0, 0

  -- A session batch: the head's next waiting messages, in order, while each is due and not expired.
  local function lock_behind(seq, r)
    local sid = r[SESSION]
    local members = redis.call('ZRANGEBYLEX', q.base .. 'w', '[' .. sid .. '\\0', '(' .. sid .. '\\1', 'LIMIT', 0, batch - 1)
    for i = 1, #members do
      local fseq = string.sub(members[i], -16)
      local values = redis.call('HMGET', q.base .. 'r', fseq, payload_field(fseq))
      local fr = decode(values[1])
      if fr[AVAILABLE_AT] > now or fr[EXPIRES_AT] <= now then return end
      behind = behind + 1
      fr[STATE] = LOCKED
      fr[DELIVERIES] = fr[DELIVERIES] + 1
      fr[LOCKED_UNTIL] = locked_until
      fr[TOKEN] = fseq .. '.' .. nonce .. '.b' .. behind
      redis.call('ZREM', q.base .. 'w', members[i])
      redis.call('ZADD', q.base .. 'f', 0, members[i])
      put(q, 'ZADD', 'k', locked_text, fseq)
      reply[#reply + 1] = tonumber(fseq)
      reply[#reply + 1] = save(q, fseq, fr)
      add_payload(values[2], fr)
    end
  end
  while taken < max and budget > 0 do
    -- Member, rank, member, rank...
    local picked = redis.call('ZPOPMIN', q.base .. 'a', max - taken)
    if #picked == 0 then break end
    local seqs = {}
    for i = 1, #picked / 2 do seqs[i] = picked[2 * i - 1] end
    local values = records_and_payloads(q, seqs)
    local killed = false
    for i = 1, #seqs do
      local seq, r = seqs[i], decode(values[2 * i - 1])
      if r[EXPIRES_AT] <= now then
        -- Expired: dead-lettered instead of delivered. Its session's next message may now rank before the
        -- rest of this pick, which goes back with the ranks it had, to be picked again.
        kill(q, seq, r, EXPIRED, false, now)
        for k = i + 1, #seqs do put(q, 'ZADD', 'a', picked[2 * k], seqs[k]) end
        killed = true
        budget = budget - 1
        break
      end
      taken = taken + 1
      r[STATE] = LOCKED
      r[DELIVERIES] = r[DELIVERIES] + 1
      r[LOCKED_UNTIL] = locked_until
      r[TOKEN] = seq .. '.' .. nonce .. '.' .. taken
      put(q, 'ZADD', 'k', locked_text, seq)
      reply[#reply + 1] = tonumber(seq)
      reply[#reply + 1] = save(q, seq, r)
      add_payload(values[2 * i], r)
      if batch > 1 and r[HAS_SESSION] == 1 then lock_behind(seq, r) end
    end
    flush(q)
    if not killed then break end
  end

  close_payloads()
  if taken == 0 then
    if redis.call('ZCARD', q.base .. 'a') > 0 then
      reply[1] = fmt(now)
    else
      local scheduled = redis.call('ZRANGE', q.base .. 'u', 0, 0, 'WITHSCORES')[2]
      local locked = redis.call('ZRANGE', q.base .. 'k', 0, 0, 'WITHSCORES')[2]
      if scheduled and locked then
        reply[1] = fmt(math.min(tonumber(scheduled), tonumber(locked)))
      else
        reply[1] = scheduled or locked or false
      end
    end
  end
  return reply
end
`;

const RECEIVE = `
-- KEYS: queue meta. ARGV: now, max, lockMs, token nonce, session batch. Returns receive_messages' reply.
local q = open_or_fail()
local max, batch = tonumber(ARGV[2]), tonumber(ARGV[5]) or 1
q.direct = max == 1 and batch == 1
local reply = receive_messages(q, tonumber(ARGV[1]), max, tonumber(ARGV[3]), ARGV[4], batch)
finish(q)
return reply
`;

const RENEW = `
-- KEYS: queue meta. ARGV: now, lockMs, tokens. Returns 1 per renewed lock, 0 where it was lost.
local q = open_or_fail()
q.direct = #ARGV == 3
local locked_until = tonumber(ARGV[1]) + tonumber(ARGV[2])
local locked_text = fmt(locked_until)
local result = {}
for i = 3, #ARGV do
  local seq, r = locked_by(q, ARGV[i])
  if seq then
    r[LOCKED_UNTIL] = locked_until
    save(q, seq, r)
    put(q, 'ZADD', 'k', locked_text, seq)
    result[#result + 1] = 1
  else
    result[#result + 1] = 0
  end
end
finish(q)
return result
`;

const COMPLETING = `
-- Deletes the messages locked under tokens. Returns 1 (ok) or 0 (lost) per token.
local function complete_tokens(q, now, tokens)
  local seqs = {}
  for i = 1, #tokens do seqs[i] = string.sub(tokens[i], 1, 16) end
  local raws = #seqs > 0 and fetch_all('HMGET', q.base .. 'r', seqs) or {}
  local result, done = {}, {}
  for i = 1, #seqs do
    local seq = seqs[i]
    local r = raws[i] and not done[seq] and decode(raws[i])
    if r and r[STATE] == LOCKED and r[TOKEN] == tokens[i] then
      done[seq] = true
      result[i] = 1
      drop(q, seq, r)
      put(q, 'ZREM', 'k', seq)
      put(q, 'ZREM', 'l', seq)
      advance(q, seq, r, now)
    else
      result[i] = 0
    end
  end
  return result
end
`;

const COMPLETE = `
-- KEYS: queue meta. ARGV: now, tokens. Returns 1 (ok) or 0 (lost) per token.
local q = open_or_fail()
q.direct = #ARGV == 2
local tokens = {}
for i = 2, #ARGV do tokens[i - 1] = ARGV[i] end
local result = complete_tokens(q, tonumber(ARGV[1]), tokens)
finish(q)
return result
`;

const COMPLETE_AND_RECEIVE = `
-- KEYS: queue meta. ARGV: token, then RECEIVE's (now, max, lockMs, token nonce, session batch).
-- Returns {0} when the lock was lost (nothing is received), else 1 followed by receive_messages' reply.
local q = open_or_fail()
local now, max, batch = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6]) or 1
q.direct = max == 1 and batch == 1
if complete_tokens(q, now, {ARGV[1]})[1] == 0 then
  finish(q)
  return {0}
end
-- The receive reads what the completion wrote (a session's next message made available).
flush(q)
local reply = receive_messages(q, now, max, tonumber(ARGV[4]), ARGV[5], batch)
finish(q)
table.insert(reply, 1, 1)
return reply
`;

const ABANDON = `
-- KEYS: queue meta. ARGV: now, token, delayMs. Returns 1 (ok) or 0 (lost).
local q = open_or_fail()
q.direct = true
local now = tonumber(ARGV[1])
local seq, r = locked_by(q, ARGV[2])
if not seq then return 0 end
put(q, 'ZREM', 'k', seq)
-- Locked behind its session's head, it waits again, with the ones behind it; a head takes them with it.
if r[HAS_SESSION] == 1 and redis.call('HGET', q.base .. 'h', r[SESSION]) ~= seq then
  back_to_waiting(q, seq, r, true)
else
  back_to_waiting(q, seq, r, false)
  if r[DELIVERIES] >= q.maxd then
    kill(q, seq, r, MAX_DELIVERIES, false, now)
  else
    deliverable(q, seq, r, now + tonumber(ARGV[3]), now)
  end
end
finish(q)
return 1
`;

const DEAD_LETTER = `
-- KEYS: queue meta. ARGV: now, token, reason, has description ('1' or '0'), description. Returns 1 or 0.
local q = open_or_fail()
q.direct = true
local seq, r = locked_by(q, ARGV[2])
if not seq then return 0 end
put(q, 'ZREM', 'k', seq)
kill(q, seq, r, ARGV[3], ARGV[4] == '1' and ARGV[5], tonumber(ARGV[1]))
finish(q)
return 1
`;

const PEEK = `
-- KEYS: queue meta. ARGV: afterSequence, limit. Returns sequence, record and payload slot per message.
local q = open_or_fail()
return listing(q, redis.call('ZRANGEBYSCORE', q.base .. 'l', '(' .. ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2])))
`;

const STATS = `
-- KEYS: queue meta. Returns available, scheduled, locked, waiting, dead, live counts and the oldest enqueuedAt,
-- taken from the live message with the lowest sequence (the oldest while senders' clocks move forward).
local q = open_or_fail()
local b = q.base
local oldest = false
local first = redis.call('ZRANGE', b .. 'l', 0, 0)[1]
if first then oldest = fmt(load(q, first)[ENQUEUED_AT]) end
return {
  redis.call('ZCARD', b .. 'a'), redis.call('ZCARD', b .. 'u'), redis.call('ZCARD', b .. 'k'),
  redis.call('ZCARD', b .. 'w'), redis.call('ZCARD', b .. 'x'), redis.call('ZCARD', b .. 'l'), oldest,
}
`;

const LIST_DEAD_LETTERS = `
-- KEYS: queue meta. ARGV: afterSequence, limit. Returns a string with a '1' for each dead letter that holds its
-- session and a '0' for each other, then sequence, record and payload slot per dead letter.
local q = open_or_fail()
local seqs = redis.call('ZRANGEBYSCORE', q.base .. 'x', '(' .. ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local reply = listing(q, seqs)
local holds = {}
for i = 1, #seqs do
  local r = decode(reply[3 * i - 1])
  local member = r[SESSION] .. '\\0' .. seqs[i]
  holds[i] = (r[HAS_SESSION] == 1 and redis.call('ZSCORE', q.base .. 'o', member)) and '1' or '0'
end
table.insert(reply, 1, table.concat(holds))
return reply
`;

const RESEND_DEAD_LETTERS = `
-- KEYS: queue meta. ARGV: now, sequences (ascending). Returns how many were resent. A session message rejoins its
-- session's waiting messages, and the first of them (by sequence) goes on unless the session has a head or a dead
-- letter holds it: one that held the session thus comes back before the messages that waited behind it.
local q = open_or_fail()
local now = tonumber(ARGV[1])
local count = 0
for i = 2, #ARGV do
  local seq = pad(tonumber(ARGV[i]))
  if redis.call('ZREM', q.base .. 'x', seq) == 1 then
    local r = load(q, seq)
    r[DELIVERIES] = 0
    r[DEAD_AT] = 0
    r[REASON] = ''
    r[HAS_DESCRIPTION] = 0
    r[DESCRIPTION] = ''
    put(q, 'ZADD', 'l', seq, seq)
    if r[HAS_SESSION] == 1 then
      local member = r[SESSION] .. '\\0' .. seq
      redis.call('ZREM', q.base .. 'o', member)
      r[STATE] = WAITING
      r[AVAILABLE_AT] = now
      redis.call('ZADD', q.base .. 'w', 0, member)
      save(q, seq, r)
      -- promote reads the record back.
      flush(q)
      resume(q, r[SESSION], now)
    else
      enter(q, seq, r, now, now)
    end
    count = count + 1
  end
end
finish(q)
return count
`;

const PURGE_DEAD_LETTERS = `
-- KEYS: queue meta. ARGV: now, then 'all', or 'some' and sequences. Returns how many were deleted. The sessions
-- the deleted dead letters held go on.
local q = open_or_fail()
local now = tonumber(ARGV[1])
local dead = q.base .. 'x'
local seqs
if ARGV[2] == 'all' then
  seqs = redis.call('ZRANGE', dead, 0, -1)
  redis.call('DEL', dead)
else
  seqs = {}
  for i = 3, #ARGV do
    local seq = pad(tonumber(ARGV[i]))
    if redis.call('ZREM', dead, seq) == 1 then seqs[#seqs + 1] = seq end
  end
end
local raws = #seqs > 0 and fetch_all('HMGET', q.base .. 'r', seqs) or {}
local freed = {}
for i = 1, #seqs do
  if raws[i] then
    local r = decode(raws[i])
    if r[HAS_SESSION] == 1 and redis.call('ZREM', q.base .. 'o', r[SESSION] .. '\\0' .. seqs[i]) == 1 then
      freed[#freed + 1] = r[SESSION]
    end
    drop(q, seqs[i], r)
  end
end
for i = 1, #freed do resume(q, freed[i], now) end
finish(q)
return #seqs
`;

const GET_SESSION_STATE = `
-- KEYS: queue meta. ARGV: session id.
local q = open_or_fail()
return redis.call('HGET', q.base .. 'c', ARGV[1])
`;

const SET_SESSION_STATE = `
-- KEYS: queue meta. ARGV: session id, 'set' or 'clear', state.
local q = open_or_fail()
if ARGV[2] == 'set' then
  redis.call('HSET', q.base .. 'c', ARGV[1], ARGV[3])
else
  redis.call('HDEL', q.base .. 'c', ARGV[1])
end
return 1
`;

const DELETE_TOPIC = `
-- KEYS: topics. ARGV: name. Returns 1 when it existed.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
local prefix = string.sub(KEYS[1], 1, -7)
prune_retained(prefix, ARGV[1], '+inf')
return 1
`;

const SUBSCRIBE = `
-- KEYS: topics, subscriptions, queue meta. ARGV: queue, subscription JSON, replay ('none', 'retained' or
-- 'since'), since, now. Binds the queue and copies the matching retained messages into it, in publish order.
local q = open_queue(string.sub(KEYS[3], 1, -2))
if not q then error({err = 'STRATUS_UNKNOWN_QUEUE'}) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[3] == 'none' then return 0 end
local subscription = cjson.decode(ARGV[2])
local since = ARGV[3] == 'since' and fmt(tonumber(ARGV[4])) or '-inf'
local now = tonumber(ARGV[5])
local prefix = string.sub(KEYS[1], 1, -7)
local topics = redis.call('HGETALL', KEYS[1])
local ids = {}
for i = 1, #topics, 2 do
  local topic = topics[i]
  prune_retained(prefix, topic, fmt(now - retention_of(topics[i + 1])))
  if any_topic_matches(subscription.topics, topic) then
    local found = redis.call('ZRANGEBYSCORE', prefix .. 'retained:t:' .. topic, since, '+inf')
    for j = 1, #found do ids[#ids + 1] = found[j] end
  end
end
if #ids == 0 then return 0 end
table.sort(ids)
local payloads = fetch_all('HMGET', prefix .. 'retained', ids)
local metas = fetch_all('HMGET', prefix .. 'retained:meta', ids)
local messages = {}
for i = 1, #ids do
  if filter_matches(subscription.filter, payloads[i]) then
    local m = cmsgpack.unpack(metas[i])
    messages[#messages + 1] = {m[1], m[2], m[3], m[4], m[5], payloads[i]}
  end
end
store(q, messages, now)
finish(q)
return #messages
`;

const PUBLISH = `
-- KEYS: topics, subscriptions, retained id counter. ARGV: topic, now, messages (see read_messages).
-- Returns per message the queues that accepted a copy.
local topic, now = ARGV[1], tonumber(ARGV[2])
local settings = redis.call('HGET', KEYS[1], topic)
if not settings then error({err = 'STRATUS_UNKNOWN_TOPIC'}) end
local prefix = string.sub(KEYS[1], 1, -7)
local messages = read_messages(3)
local delivered = {}
for i = 1, #messages do delivered[i] = {} end
local subscriptions = redis.call('HGETALL', KEYS[2])
local queues = {}
for i = 1, #subscriptions, 2 do
  local subscription = cjson.decode(subscriptions[i + 1])
  if any_topic_matches(subscription.topics, topic) then
    queues[#queues + 1] = {name = subscriptions[i], filter = subscription.filter}
  end
end
table.sort(queues, function(a, b) return a.name < b.name end)
for _, target in ipairs(queues) do
  local q = open_queue(queue_base(prefix, target.name))
  if q then
    local chosen, positions = {}, {}
    for i = 1, #messages do
      if filter_matches(target.filter, messages[i][6]) then
        chosen[#chosen + 1] = messages[i]
        positions[#positions + 1] = i
      end
    end
    if #chosen > 0 then
      local sequences = store(q, chosen, now)
      for k = 1, #chosen do
        if sequences[k] ~= 0 then table.insert(delivered[positions[k]], target.name) end
      end
      finish(q)
    end
  end
end
local retention = retention_of(settings)
if retention > 0 and #messages > 0 then
  local last = redis.call('INCRBY', KEYS[3], #messages)
  local payloads, metas, index = {}, {}, {}
  for i = 1, #messages do
    local m = messages[i]
    local id = pad(last - #messages + i)
    payloads[#payloads + 1] = id
    payloads[#payloads + 1] = m[6]
    metas[#metas + 1] = id
    metas[#metas + 1] = cmsgpack.pack({m[1], m[2], m[3], m[4], m[5]})
    index[#index + 1] = fmt(now)
    index[#index + 1] = id
  end
  call_all('HSET', prefix .. 'retained', payloads)
  call_all('HSET', prefix .. 'retained:meta', metas)
  call_all('ZADD', prefix .. 'retained:t:' .. topic, index)
end
prune_retained(prefix, topic, fmt(now - retention))
return delivered
`;

/** Each script: the shared parts it uses, in order, then its own code (run as the body of a function). */
const DEFINITIONS = {
  putQueue: [[], PUT_QUEUE],
  deleteQueue: [[], DELETE_QUEUE],
  send: [[CORE], SEND],
  receive: [[CORE, BLOB_READ, RECEIVING], RECEIVE],
  renew: [[CORE], RENEW],
  complete: [[CORE, BLOB_DROP, COMPLETING], COMPLETE],
  completeAndReceive: [[CORE, BLOB_DROP, BLOB_READ, COMPLETING, RECEIVING], COMPLETE_AND_RECEIVE],
  abandon: [[CORE], ABANDON],
  deadLetter: [[CORE], DEAD_LETTER],
  peek: [[CORE, BLOB_READ], PEEK],
  stats: [[CORE], STATS],
  listDeadLetters: [[CORE, BLOB_READ], LIST_DEAD_LETTERS],
  resendDeadLetters: [[CORE], RESEND_DEAD_LETTERS],
  purgeDeadLetters: [[CORE, BLOB_DROP], PURGE_DEAD_LETTERS],
  getSessionState: [[CORE], GET_SESSION_STATE],
  setSessionState: [[CORE], SET_SESSION_STATE],
  deleteTopic: [[CORE, ROUTING], DELETE_TOPIC],
  subscribe: [[CORE, ROUTING], SUBSCRIBE],
  publish: [[CORE, ROUTING], PUBLISH],
} as const satisfies Record<string, readonly [readonly string[], string]>;

export type ScriptName = keyof typeof DEFINITIONS;

const names = Object.keys(DEFINITIONS) as ScriptName[];

/** Each script whole, for EVAL: its parts, then its code. */
export const SCRIPTS = Object.fromEntries(
  names.map((name) => [name, DEFINITIONS[name][0].join('') + DEFINITIONS[name][1]]),
) as Record<ScriptName, string>;

/** Each script's own code, without the shared parts (the function library defines those once). */
export const SCRIPT_BODIES = Object.fromEntries(names.map((name) => [name, DEFINITIONS[name][1]])) as Record<
  ScriptName,
  string
>;

/** Every shared part once, each after the parts it uses: the top of the function library. */
export const SHARED_PARTS = [CORE, BLOB_DROP, BLOB_READ, COMPLETING, RECEIVING, ROUTING] as const;
