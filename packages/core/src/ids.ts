import { randomFillSync } from 'node:crypto';

/**
 * Random bytes are taken from a pool refilled 4 KiB at a time: one system call per ~250 ids instead of one per id,
 * which matters to queues that mint an id and a lock token for every message.
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

function take(count: number): number {
  if (offset + count > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += count;
  return start;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * A UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then random bits. Sorts by creation time, which keeps
 * B-tree indexes on ids compact.
 */
export function uuidv7(now: number = Date.now()): string {
  const at = take(10);
  // 48-bit big-endian milliseconds: the high 16 bits, then the low 32.
  const high = Math.floor(now / 0x1_0000_0000);
  const low = now >>> 0;
  const b = [
    (high >>> 8) & 0xff,
    high & 0xff,
    low >>> 24,
    (low >>> 16) & 0xff,
    (low >>> 8) & 0xff,
    low & 0xff,
    ((pool[at] as number) & 0x0f) | 0x70,
    pool[at + 1] as number,
    ((pool[at + 2] as number) & 0x3f) | 0x80,
    pool[at + 3] as number,
  ];
  let hex = '';
  for (let i = 0; i < 10; i++) {
    hex += HEX[b[i] as number];
    if (i === 3 || i === 5 || i === 7 || i === 9) hex += '-';
  }
  for (let i = 4; i < 10; i++) hex += HEX[pool[at + i] as number];
  return hex;
}

/** A short random identifier (hex), e.g. for lock tokens and instance ids in logs and shared state. */
export function randomId(bytes = 8): string {
  const at = take(bytes);
  let id = '';
  for (let i = 0; i < bytes; i++) id += HEX[pool[at + i] as number];
  return id;
}
