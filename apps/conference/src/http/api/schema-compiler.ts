/**
 * The API's schema validation: Fastify's own Ajv compiler, but strict for bodies. Fastify's defaults suit query
 * strings (all text, so `wait=0.5` becomes a number) but would quietly turn a JSON body's `null` into 0, `"10"` into
 * 10 and `["x"]` into "x", and drop fields the schema does not name; the API refuses those, naming every problem.
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifySchemaCompiler } from 'fastify';

export function apiSchemaCompiler(): FastifySchemaCompiler<unknown> {
  const compilers = AjvCompiler();
  // allErrors (off by default against costly inputs) stays cheap: the body schemas have no pattern or uniqueItems,
  // so checking every value is linear in the body, whose size Fastify bounds (bodyLimit).
  const body = compilers(
    {},
    { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } },
  );
  const otherParts = compilers({}, { customOptions: {} });
  // Each takes the route's definition, as Fastify passes it (its typings call that a schema).
  return (route) => (route.httpPart === 'body' ? body : otherParts)(route);
}
