// The PostgreSQL backend's lock tokens: `<sequence>:<uuid>`, and parsing them into the functions' arrays.

/** `<sequence>:<uuid>`: the sequence finds the row by primary key, the uuid identifies the delivery. */
export const LOCK_TOKEN = /^(\d{1,19}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/**
 * The well-formed tokens as the functions' arrays, and the delivery uuid at each position (undefined where the
 * token is not one of ours, which settles as lost).
 */
export function parseTokens(tokens: readonly string[]): {
  sequences: string[];
  uuids: string[];
  byPosition: (string | undefined)[];
} {
  const sequences: string[] = [];
  const uuids: string[] = [];
  const byPosition = tokens.map((token) => {
    const match = LOCK_TOKEN.exec(token);
    if (match === null) return undefined;
    sequences.push(match[1] as string);
    uuids.push(match[2] as string);
    return match[2] as string;
  });
  return { sequences, uuids, byPosition };
}
