import { createHash } from 'node:crypto';

/** A stable bigint advisory-lock key for a name (60 bits of its SHA-1, so it is a positive bigint). */
export function advisoryKey(name: string): string {
  return BigInt(`0x${createHash('sha1').update(`stratus:${name}`).digest('hex').slice(0, 15)}`).toString();
}
