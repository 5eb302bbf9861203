/**
 * Schema validation: Fastify's own Ajv compiler, strict for bodies and forms. Fastify's defaults suit query strings
 * (all text, so `wait=0.5` becomes a number) but would quietly turn a JSON body's `null` into 0, `"10"` into 10 and
 * `["x"]` into "x", and drop fields the schema does not name; bodies and forms refuse those, naming every problem.
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifySchemaCompiler } from 'fastify';
import type { JsonSchema } from './json-schema.js';
import type { SchemaError } from './messages.js';

/** A compiled schema: true when the value fits, else false with its errors. */
export type Validator = ((value: unknown) => boolean) & { errors?: readonly SchemaError[] | null };

const compilers = AjvCompiler();
// allErrors (off by default against costly inputs) stays cheap: the patterns of bodies and forms are single
// character classes (linear) and there is no uniqueItems, so checking every value is linear in the body, whose size
// Fastify bounds.
const strict = compilers(
  {},
  { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true } },
);
const lenient = compilers({}, { customOptions: {} });

export function apiSchemaCompiler(): FastifySchemaCompiler<unknown> {
  // Each takes the route's definition, as Fastify passes it (its typings call that a schema).
  return (route) => (route.httpPart === 'body' ? strict : lenient)(route);
}

/** `schema` compiled as the API's bodies are (Ajv keeps it: compiling the same object again costs nothing). */
export function strictValidator(schema: JsonSchema): Validator {
  return strict({ schema, method: 'POST', url: '', httpPart: 'body' }) as Validator;
}
