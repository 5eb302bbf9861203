/**
 * Values at the edges that a schema's own bounds do not name: characters of different sizes, ids in other spellings,
 * dates that do not exist, numbers where floating point and integers end, and a value of each JSON type.
 */
import fc from 'fast-check';

/** Where 32-bit integers end. */
export const INT32 = 2 ** 31;

/** Characters of different sizes: ASCII, Latin-1, astral (two UTF-16 units, one character). */
export const FILLERS = ['a', 'é', '\u{1f600}'] as const;

export const UUID_SPELLINGS = [
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '0190a5d8b4c37d1e9f2a3b4c5d6e7f80',
  '{0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f80}',
  '0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f8',
  '0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f800',
] as const;

export const ODD_DATES = [
  '0000-01-01',
  '9999-12-31',
  '2027-02-29',
  '2028-02-29',
  '2027-02-30',
  '2027-13-01',
  '2027-00-10',
  '2027-1-1',
  '+275760-09-13',
  '2027-03-01T00:00:00Z',
] as const;

export const ODD_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  0.005,
  10.005,
  1e-7,
  Number.MIN_VALUE,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  INT32,
  -INT32 - 1,
  1e308,
  -1e308,
];

/** A value of each JSON type; `malformed` takes those of the types a schema does not allow. */
const ONE_OF_EACH_TYPE: readonly { readonly type: string; readonly value: unknown }[] = [
  { type: 'string', value: 'text' },
  { type: 'string', value: '' },
  { type: 'string', value: '42' },
  { type: 'number', value: 1.5 },
  { type: 'integer', value: 42 },
  { type: 'integer', value: -1 },
  { type: 'boolean', value: true },
  { type: 'null', value: null },
  { type: 'array', value: [] },
  { type: 'array', value: ['text', 1] },
  { type: 'object', value: {} },
  { type: 'object', value: { key: 'value' } },
];

export function wrongTypes(types: readonly string[]): fc.Arbitrary<unknown> {
  const allowed = (type: string) => types.includes(type) || (type === 'integer' && types.includes('number'));
  const values = ONE_OF_EACH_TYPE.filter((candidate) => !allowed(candidate.type)).map(({ value }) => value);
  return values.length === 0 ? fc.constant(undefined) : fc.constantFrom(...values);
}
