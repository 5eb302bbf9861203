/**
 * Requests for a route no OpenAPI document describes (a site's page or form), right but for a faulty part or two
 * (./request-parts.ts): its path parameters, a query string and, for a POST, PUT or PATCH, a url-encoded body, made
 * of the field names the site's forms carry. Good fields take known values (else plain text or a number); faulty
 * ones hostile text, fields the route does not know and repeated fields, and bodies that do not decode or come as
 * JSON.
 */
import fc from 'fast-check';
import { absent, type Part, requestOf, withFaults } from './faults.js';
import type { FuzzRequest } from './fuzz-request.js';
import { hostileText, hostileUrlPart } from './hostile.js';
import { asText, encodePairs, extraPairs, hostileQuery, type Pair, queryOf } from './pairs.js';
import { contentTypePart, pathPart, type RequestContext, shapePart } from './request-parts.js';
import type { Route } from './route-table.js';

const FORM = 'application/x-www-form-urlencoded';

const plainValue = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 24 }),
  fc.integer({ min: 0, max: 30 }).map(String),
);

function fieldValue(context: RequestContext, name: string, faulty: boolean): fc.Arbitrary<string> {
  const known = context.known(name);
  if (faulty) return fc.oneof(plainValue, hostileText, fc.constantFrom('', ' ', '-1', '1.5', '1e3'));
  return known.length === 0 ? plainValue : fc.constantFrom(...known).map(asText);
}

/**
 * `fields` with values: good, every field with known values and some of the others; faulty, some fields with bad
 * values, and fields the route does not know.
 */
function pairsOf(context: RequestContext, fields: readonly string[], faulty: boolean): fc.Arbitrary<Pair[]> {
  const hasKnown = (name: string) => context.known(name).length > 0;
  const names = faulty
    ? fc.subarray([...fields])
    : fc
        .subarray(fields.filter((name) => !hasKnown(name)))
        .map((some) => [...fields.filter(hasKnown), ...some]);
  const chosen = names.chain((list) =>
    fc.tuple(...list.map((name) => fieldValue(context, name, faulty).map((value): Pair => [name, value]))),
  );
  if (!faulty) return chosen;
  return fc.tuple(chosen, extraPairs(fields)).map(([own, extra]) => [...own, ...extra]);
}

function bodyPart(context: RequestContext, fields: readonly string[]): Part<string | undefined> {
  const faulty = pairsOf(context, fields, true);
  return {
    good: pairsOf(context, fields, false).map(encodePairs),
    bad: fc.oneof(
      { weight: 6, arbitrary: faulty.map(encodePairs) },
      { weight: 1, arbitrary: faulty.map((pairs) => JSON.stringify(Object.fromEntries(pairs))) },
      { weight: 1, arbitrary: hostileUrlPart },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
  };
}

/** Good: fields the site's pages carry with known values (ids and versions, as in their links). */
function queryPart(context: RequestContext, fields: readonly string[]): Part<string> {
  const known = fields.filter((name) => context.known(name).length > 0);
  return {
    good: pairsOf(context, known, false).map(queryOf),
    bad: fc.oneof(pairsOf(context, fields, true).map(queryOf), hostileQuery),
  };
}

/** `fields`: the field names the site's forms carry (htmlFormFields), to use in bodies and query strings. */
export function formRequests(
  context: RequestContext,
  route: Route,
  fields: readonly string[],
): fc.Arbitrary<FuzzRequest> {
  const takesBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
  return withFaults({
    path: pathPart(context, route.url),
    query: queryPart(context, fields),
    shape: shapePart,
    contentType: takesBody ? contentTypePart(FORM) : absent,
    body: takesBody ? bodyPart(context, fields) : absent,
  }).map((parts) => requestOf(route.method, parts));
}
