import { randomInt } from 'node:crypto';

/** The Journey's 32 symbols: no I, L, O or 0, which read alike. */
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ123456789';

/** A random code of `length` symbols (6 for orders and conferences), drawn uniformly from a CSPRNG. */
export function accessCode(length = 6): string {
  let code = '';
  for (let i = 0; i < length; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

export const ACCESS_CODE_PATTERN = /^[ABCDEFGHJKMNPQRSTUVWXYZ1-9]{6}$/;
