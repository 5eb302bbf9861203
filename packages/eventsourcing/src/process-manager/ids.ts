import { createHash } from 'node:crypto';

/**
 * A UUID-shaped id derived from its parts (SHA-256, version nibble 8: "custom"). Handling the same event again
 * yields the same ids, so a command or timeout sent twice is a duplicate the receiver can detect.
 */
export function deterministicId(...parts: readonly string[]): string {
  return shape(digest(parts));
}

/** A UUID whose first 48 bits are a time: version 7, or 8 as made by derivedId. */
const TIMED_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[78][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * Like deterministicId over `source` and `parts`, but when `source` is a time-ordered UUID (version 7, or an id
 * derived from one) the result keeps its first 48 bits, the milliseconds. Ids made from the same moment's events
 * then sort together, so the indexes that hold them (event ids, duplicate detection) take inserts at their end
 * instead of at random pages: fewer pages to read and to write back per commit.
 */
export function derivedId(source: string, ...parts: readonly string[]): string {
  const hex = digest([source, ...parts]);
  if (!TIMED_UUID.test(source)) return shape(hex);
  return shape(source.slice(0, 8) + source.slice(9, 13) + hex.slice(12));
}

function digest(parts: readonly string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) {
    // Length-prefixed so that ('ab', 'c') and ('a', 'bc') differ.
    hash.update(`${part.length}:${part};`);
  }
  return hash.digest('hex');
}

/** Hex digits as a UUID of version 8 with the RFC 4122 variant. */
function shape(hex: string): string {
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
