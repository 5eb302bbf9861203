import { createHash } from 'node:crypto';

/**
 * A UUID-shaped id derived from its parts (SHA-256, version nibble 8: "custom"). Handling the same event again
 * yields the same ids, so a command or timeout sent twice is a duplicate the receiver can detect.
 */
export function deterministicId(...parts: readonly string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) {
    // Length-prefixed so that ('ab', 'c') and ('a', 'bc') differ.
    hash.update(`${part.length}:${part};`);
  }
  const hex = hash.digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
