/** Values as requests carry them: as text, JSON or a form, and name/value pairs in query strings and form bodies. */
import fc from 'fast-check';
import { encodeAnyText, hostileText, hostileUrlPart } from './hostile.js';

/** A value as text in a URL, header or form: strings as they are, anything else as JSON. */
export function asText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

/** A JSON body, or none for a value JSON cannot write. */
export function asJson(value: unknown): string | undefined {
  return value === undefined ? undefined : JSON.stringify(value);
}

export type Pair = readonly [name: string, value: string];

/** Name/value pairs url-encoded, as a query string or a form body writes them. */
export function encodePairs(pairs: readonly Pair[]): string {
  return pairs.map(([name, value]) => `${encodeAnyText(name)}=${encodeAnyText(value)}`).join('&');
}

/** A value as a url-encoded body: an object's properties as its fields, anything else as it is. */
export function asForm(value: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return asText(value);
  return encodePairs(Object.entries(value).map(([name, field]) => [name, asText(field)]));
}

/** A query string (with its `?`, or '') from name/value pairs. */
export function queryOf(pairs: readonly Pair[]): string {
  return pairs.length === 0 ? '' : `?${encodePairs(pairs)}`;
}

/** Query strings that do not decode, or repeat a parameter thousands of times. */
export const hostileQuery: fc.Arbitrary<string> = fc.oneof(
  hostileUrlPart.map((raw) => `?${raw}`),
  fc.constantFrom('?', '?&&', '?=', '?a=%', '?a=1&a=2&a=3', `?${'a=1&'.repeat(2_000)}`),
);

/** A few name/value pairs a route did not ask for: hostile names, or its own names repeated. */
export function extraPairs(names: readonly string[]): fc.Arbitrary<Pair[]> {
  const name = names.length === 0 ? hostileText : fc.oneof(fc.constantFrom(...names), hostileText);
  return fc.array(fc.tuple(name, hostileText), { minLength: 1, maxLength: 2 });
}
