/**
 * Requests for one operation of an OpenAPI document, right but for a faulty part or two (./request-parts.ts): its
 * path and query parameters and its body valid (known values first), or at a boundary, malformed (./schema-values.ts)
 * or hostile; plus what the document does not foresee: extra and repeated query parameters, another content type,
 * a body where none is taken, JSON that does not parse, a bad bearer token.
 */
import fc from 'fast-check';
import type { JsonSchema } from '../schemas/json-schema.js';
import { absent, type Part, requestOf, withFaults } from './faults.js';
import type { FuzzRequest } from './fuzz-request.js';
import { hostileHeaderValue, hostileJsonText } from './hostile.js';
import type { OpenApiOperation, OpenApiParameter } from './openapi-operations.js';
import { asForm, asJson, asText, extraPairs, hostileQuery, type Pair, queryOf } from './pairs.js';
import {
  authorizationPart,
  badValue,
  contentTypePart,
  goodValue,
  pathPart,
  type RequestContext,
  shapePart,
} from './request-parts.js';

/** Good: the required parameters and half the others, with good values. Bad: any values, extras, raw junk. */
function queryPart(context: RequestContext, parameters: readonly OpenApiParameter[]): Part<string> {
  const pairs = (faulty: boolean) =>
    fc.tuple(
      ...parameters.map((parameter) => {
        const value = faulty
          ? badValue(context, parameter.schema)
          : goodValue(context, parameter.name, parameter.schema);
        const pair = value.map((text): Pair => [parameter.name, asText(text)]);
        return parameter.required && !faulty ? pair : fc.option(pair, { nil: undefined });
      }),
    );
  const present = (list: readonly (Pair | undefined)[]) =>
    list.filter((pair): pair is Pair => pair !== undefined);
  return {
    good: pairs(false).map((list) => queryOf(present(list))),
    bad: fc.oneof(
      fc
        .tuple(pairs(true), extraPairs(parameters.map((p) => p.name)))
        .map(([own, extra]) => queryOf([...present(own), ...extra])),
      hostileQuery,
    ),
  };
}

/** What a header value can carry: visible ASCII, Latin-1, spaces and tabs. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Header parameters: good values (as far as a header can carry them), or hostile ones. */
function headerPart(
  context: RequestContext,
  parameters: readonly OpenApiParameter[],
): Part<Record<string, string>> {
  const headers = (faulty: boolean) =>
    fc
      .tuple(
        ...parameters.map((parameter) =>
          (faulty
            ? hostileHeaderValue
            : goodValue(context, parameter.name, parameter.schema)
                .map(asText)
                .filter((text) => HEADER_VALUE.test(text))
          ).map((value): Pair => [parameter.name.toLowerCase(), value]),
        ),
      )
      .map((pairs) => Object.fromEntries(pairs));
  return { good: headers(false), bad: headers(true) };
}

/** Good: a valid body (none where none is taken). Bad: a boundary or malformed one, hostile JSON text, none. */
function bodyPart(
  context: RequestContext,
  mediaType: string,
  schema: JsonSchema | undefined,
): Part<string | undefined> {
  if (schema === undefined)
    return { good: fc.constant(undefined), bad: fc.oneof(fc.constant('{}'), hostileJsonText) };
  const encode = /json/i.test(mediaType) ? asJson : asForm;
  return {
    good: context.values.valid(schema).map(encode),
    bad: fc.oneof(
      { weight: 2, arbitrary: context.values.boundary(schema).map(encode) },
      { weight: 3, arbitrary: context.values.malformed(schema).map(encode) },
      { weight: 1, arbitrary: hostileJsonText },
      { weight: 1, arbitrary: fc.constant(undefined) },
    ),
  };
}

export function operationRequests(
  context: RequestContext,
  operation: OpenApiOperation,
): fc.Arbitrary<FuzzRequest> {
  const inPath = new Map(operation.parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.schema]));
  const [mediaType, schema] = [...operation.body].find(([type]) => /json/i.test(type)) ??
    [...operation.body][0] ?? ['application/json', undefined];
  return withFaults({
    path: pathPart(context, operation.path, (name) => inPath.get(name)),
    query: queryPart(
      context,
      operation.parameters.filter((p) => p.in === 'query'),
    ),
    headers: headerPart(
      context,
      operation.parameters.filter((p) => p.in === 'header'),
    ),
    shape: shapePart,
    authorization: operation.bearer ? authorizationPart(context.bearerTokens) : absent,
    contentType: contentTypePart(mediaType),
    body: bodyPart(context, mediaType, schema),
  }).map((parts) => requestOf(operation.method, parts));
}
