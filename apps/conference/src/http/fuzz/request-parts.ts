/**
 * The parts of a fuzzed request that every route has, documented or not (./faults.ts): the path with its parameters
 * (known values, or others and segments that do not decode), the URL's shape, the content type and the
 * Authorization header.
 */
import fc from 'fast-check';
import type { JsonSchema } from '../schemas/json-schema.js';
import type { Part } from './faults.js';
import { encodeAnyText, hostileHeaderValue, hostileText, hostileUrlPart } from './hostile.js';
import { asText } from './pairs.js';
import type { SchemaValues } from './schema-values.js';

/** What requests are made from: schema values, and the values known good for a name (ids, codes, tokens). */
export interface RequestContext {
  readonly values: SchemaValues;
  readonly known: (name: string) => readonly unknown[];
  /** Bearer tokens that pass (none: only bad ones are sent). */
  readonly bearerTokens: readonly string[];
}

const TEXT: JsonSchema = { type: 'string' };

/** A value the name is known to take (the first, its main one, half the time), else one of its schema. */
export function goodValue(context: RequestContext, name: string, schema: JsonSchema): fc.Arbitrary<unknown> {
  const known = context.known(name);
  if (known.length === 0) return context.values.valid(schema);
  return fc.oneof(fc.constant(known[0]), fc.constantFrom(...known));
}

/** A value of the schema that is likely not known, at a boundary, malformed, or hostile text. */
export function badValue(context: RequestContext, schema: JsonSchema): fc.Arbitrary<unknown> {
  return fc.oneof(
    context.values.valid(schema),
    context.values.boundary(schema),
    context.values.malformed(schema),
    hostileText,
  );
}

/**
 * The path of `template` (`{name}` as in OpenAPI or `:name` as in Fastify) with each parameter filled in (good:
 * known values; bad: others, and segments that do not decode); `schemaOf` gives a parameter's schema (default text).
 */
export function pathPart(
  context: RequestContext,
  template: string,
  schemaOf: (name: string) => JsonSchema | undefined = () => undefined,
): Part<string> {
  const pieces = template.split(/\{(\w+)\}|:(\w+)/);
  const path = (faulty: boolean) => {
    const parts: fc.Arbitrary<string>[] = [];
    for (let i = 0; i < pieces.length; i += 3) {
      parts.push(fc.constant(pieces[i] ?? ''));
      const name = pieces[i + 1] ?? pieces[i + 2];
      if (name === undefined) continue;
      const schema = schemaOf(name) ?? TEXT;
      const good = goodValue(context, name, schema).map((value) => encodeAnyText(asText(value)));
      const bad = fc.oneof(
        badValue(context, schema).map((value) => encodeAnyText(asText(value))),
        hostileUrlPart,
      );
      parts.push(faulty ? fc.oneof(good, bad) : good);
    }
    return fc.tuple(...parts).map((values) => values.join(''));
  };
  return { good: path(false), bad: path(true) };
}

/** What the URL ends with before its query: nothing, or a trailing slash, a fragment, a parameter segment. */
export const shapePart: Part<string> = {
  good: fc.constant(''),
  bad: fc.constantFrom('/', '#top', ';a=b', '//'),
};

const OTHER_CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'application/json;;;',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  'text/plain',
  'text/html',
  'application/xml',
  'application/octet-stream',
  '*/*',
  '',
] as const;

/** The content type a body is sent with: its own; when faulty another, a hostile one or none. */
export function contentTypePart(own: string): Part<string | undefined> {
  return {
    good: fc.constant(own),
    bad: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...OTHER_CONTENT_TYPES) },
      { weight: 1, arbitrary: fc.oneof(hostileHeaderValue, fc.constant(undefined)) },
    ),
  };
}

/** The Authorization header of a secured operation: a good token; when faulty none or a bad one. */
export function authorizationPart(tokens: readonly string[]): Part<string | undefined> {
  const odd = tokens.flatMap((token) => [
    `bearer ${token}`,
    `Bearer ${token}x`,
    `Bearer ${token.slice(0, -2)}`,
  ]);
  return {
    good: tokens.length === 0 ? fc.constant(undefined) : fc.constantFrom(...tokens).map((t) => `Bearer ${t}`),
    bad: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom('Bearer', 'Bearer ', 'Basic YTpi', 'Bearer a.b', 'Bearer ..', 'Bearer .', ...odd),
      hostileHeaderValue.map((value) => `Bearer ${value}`),
    ),
  };
}
