/**
 * Values for a JSON schema (the subset OpenAPI 3 documents use: type, enum, const, properties, required,
 * additionalProperties, items, min/max lengths, items and numbers, pattern, format), in three kinds:
 * - valid: what the schema takes, with the caller's known values for a property or parameter name mixed in (real
 *   ids, tokens, e-mail addresses), so that requests get past "not found";
 * - boundary: at and just past each limit (lengths in characters, astral ones included; numbers at, below and above
 *   their bounds; empty and whitespace-only text; dates that do not exist; ids in other spellings);
 * - malformed: what the schema refuses (other types, missing and extra properties, hostile text, deep nesting).
 */
import fc from 'fast-check';
import type { JsonSchema } from '../schemas/json-schema.js';
import { hostileText, nested } from './hostile.js';
import { FILLERS, INT32, ODD_DATES, ODD_NUMBERS, UUID_SPELLINGS, wrongTypes } from './odd-values.js';

export interface SchemaValueOptions {
  /** The schema a `$ref` names (others returned as they are). */
  readonly resolve: (schema: JsonSchema) => JsonSchema;
  /** Known good values for a property or parameter of this name (none: []). */
  readonly known: (name: string) => readonly unknown[];
}

export interface SchemaValues {
  valid(schema: JsonSchema, name?: string): fc.Arbitrary<unknown>;
  boundary(schema: JsonSchema, name?: string): fc.Arbitrary<unknown>;
  malformed(schema: JsonSchema, name?: string): fc.Arbitrary<unknown>;
  /** Mostly valid, else boundary or malformed. */
  any(schema: JsonSchema, name?: string): fc.Arbitrary<unknown>;
}

/** Generated text stays this short unless a limit is the point. */
const TEXT_CAP = 24;

const typesOf = (schema: JsonSchema): readonly string[] =>
  schema.type === undefined ? [] : typeof schema.type === 'string' ? [schema.type] : schema.type;

const numberOf = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function bounds(schema: JsonSchema): { min: number | undefined; max: number | undefined } {
  const exclusiveMin = numberOf(schema.exclusiveMinimum);
  const exclusiveMax = numberOf(schema.exclusiveMaximum);
  return {
    min: numberOf(schema.minimum) ?? (exclusiveMin === undefined ? undefined : exclusiveMin + 1e-9),
    max: numberOf(schema.maximum) ?? (exclusiveMax === undefined ? undefined : exclusiveMax - 1e-9),
  };
}

/** A date yyyy-mm-dd, or an instant, between 1900 and 2200. */
const dates = fc.date({ min: new Date('1900-01-01'), max: new Date('2200-12-31'), noInvalidDate: true });

export function schemaValues(options: SchemaValueOptions): SchemaValues {
  const { resolve, known } = options;

  const withKnown = (own: fc.Arbitrary<unknown>, name: string | undefined): fc.Arbitrary<unknown> => {
    const values = name === undefined ? [] : known(name);
    if (values.length === 0) return own;
    return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: own });
  };

  function validString(schema: JsonSchema): fc.Arbitrary<unknown> {
    const minLength = numberOf(schema.minLength) ?? 0;
    const maxLength = Math.max(minLength, Math.min(numberOf(schema.maxLength) ?? TEXT_CAP, TEXT_CAP));
    switch (schema.format) {
      case 'uuid':
        return fc.uuid();
      case 'date':
        return dates.map((date) => date.toISOString().slice(0, 10));
      case 'date-time':
        return dates.map((date) => date.toISOString());
      case 'email':
        return fc.emailAddress();
    }
    if (typeof schema.pattern !== 'string') return fc.string({ unit: 'grapheme', minLength, maxLength });
    return fc
      .stringMatching(new RegExp(schema.pattern, 'u'), { maxLength })
      .filter((text) => [...text].length >= minLength);
  }

  function validNumber(schema: JsonSchema, integer: boolean): fc.Arbitrary<unknown> {
    const { min, max } = bounds(schema);
    const low = Math.max(Math.ceil(min ?? -1_000_000), -INT32);
    const high = Math.min(Math.floor(max ?? 1_000_000), INT32 - 1);
    const integers = fc.integer({ min: low, max: Math.max(low, high) });
    if (integer) return integers;
    return fc.oneof(
      integers,
      // Cents: what prices are.
      fc
        .integer({
          min: Math.max(low * 100, -INT32),
          max: Math.max(low * 100, Math.min(high * 100, INT32 - 1)),
        })
        .map((cents) => cents / 100),
      fc.double({ min: min ?? -1e6, max: max ?? 1e6, noNaN: true, noDefaultInfinity: true }),
    );
  }

  function validObject(schema: JsonSchema): fc.Arbitrary<unknown> {
    const properties = schema.properties ?? {};
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, property] of Object.entries(properties)) record[name] = valid(property, name);
    return fc.record(record, { requiredKeys: (schema.required ?? []).filter((name) => name in properties) });
  }

  function validOwn(schema: JsonSchema): fc.Arbitrary<unknown> {
    if ('const' in schema) return fc.constant(schema.const);
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
    const types = typesOf(schema);
    if (types.length > 1) return fc.oneof(...types.map((type) => validOwn({ ...schema, type })));
    switch (types[0]) {
      case 'string':
        return validString(schema);
      case 'integer':
        return validNumber(schema, true);
      case 'number':
        return validNumber(schema, false);
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array':
        return fc.array(valid(schema.items ?? {}), {
          minLength: numberOf(schema.minItems) ?? 0,
          maxLength: Math.max(numberOf(schema.minItems) ?? 0, Math.min(numberOf(schema.maxItems) ?? 4, 4)),
        });
      case 'object':
        return validObject(schema);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  }

  function valid(schema: JsonSchema, name?: string): fc.Arbitrary<unknown> {
    return withKnown(validOwn(resolve(schema)), name);
  }

  function boundaryString(schema: JsonSchema): fc.Arbitrary<unknown> {
    const minLength = numberOf(schema.minLength) ?? 0;
    const maxLength = numberOf(schema.maxLength);
    const lengths = [
      0,
      1,
      minLength - 1,
      minLength,
      ...(maxLength === undefined ? [] : [maxLength, maxLength + 1]),
    ];
    const exact = fc
      .tuple(
        fc.constantFrom(...new Set(lengths.filter((length) => length >= 0))),
        fc.constantFrom(...FILLERS),
      )
      .map(([length, filler]) => filler.repeat(length));
    const odd =
      schema.format === 'uuid'
        ? [fc.constantFrom(...UUID_SPELLINGS), fc.uuid().map((id) => id.toUpperCase())]
        : schema.format === 'date' || schema.format === 'date-time'
          ? [fc.constantFrom(...ODD_DATES)]
          : [];
    const padded = validString(schema).map((text) => ` ${String(text)}\t`);
    return fc.oneof(exact, padded, fc.constantFrom(' ', '   '), ...odd);
  }

  function boundaryNumber(schema: JsonSchema): fc.Arbitrary<unknown> {
    const { min, max } = bounds(schema);
    const limits = [min, max]
      .filter((limit): limit is number => limit !== undefined)
      .flatMap((limit) => [limit, limit - 1, limit + 1, limit - 0.01, limit + 0.01]);
    return fc.constantFrom(...limits, ...ODD_NUMBERS);
  }

  function boundaryObject(schema: JsonSchema): fc.Arbitrary<unknown> {
    const properties = schema.properties ?? {};
    const required = (schema.required ?? []).filter((name) => name in properties);
    const record = (requiredKeys: readonly string[], edge: boolean) => {
      const fields: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(properties))
        fields[name] = edge
          ? fc.oneof({ weight: 2, arbitrary: valid(property, name) }, boundary(property, name))
          : valid(property, name);
      return fc.record(fields, { requiredKeys: [...requiredKeys] });
    };
    return fc.oneof(record(required, false), record(Object.keys(properties), false), record(required, true));
  }

  function boundaryOwn(schema: JsonSchema): fc.Arbitrary<unknown> {
    const types = typesOf(schema);
    if (types.length > 1) return fc.oneof(...types.map((type) => boundaryOwn({ ...schema, type })));
    switch (types[0]) {
      case 'string':
        return Array.isArray(schema.enum)
          ? fc.constantFrom('', ...schema.enum.map(String))
          : boundaryString(schema);
      case 'integer':
      case 'number':
        return boundaryNumber(schema);
      case 'array': {
        const maxItems = numberOf(schema.maxItems);
        const lengths = [
          0,
          numberOf(schema.minItems) ?? 0,
          ...(maxItems === undefined ? [] : [maxItems, maxItems + 1]),
        ];
        return fc
          .constantFrom(...new Set(lengths))
          .chain((length) => fc.array(valid(schema.items ?? {}), { minLength: length, maxLength: length }));
      }
      case 'object':
        return boundaryObject(schema);
      default:
        return validOwn(schema);
    }
  }

  function boundary(schema: JsonSchema, _name?: string): fc.Arbitrary<unknown> {
    return boundaryOwn(resolve(schema));
  }

  function malformedObject(schema: JsonSchema): fc.Arbitrary<unknown> {
    const properties = schema.properties ?? {};
    const required = (schema.required ?? []).filter((name) => name in properties);
    const validOne = validObject(schema) as fc.Arbitrary<Record<string, unknown>>;
    const variants: fc.Arbitrary<unknown>[] = [
      // An extra property, one a parser may treat specially among them.
      fc
        .tuple(
          validOne,
          fc.oneof(fc.constantFrom('__proto__', 'constructor', 'extra', ''), fc.string()),
          fc.jsonValue(),
        )
        .map(([object, key, value]) => ({ ...object, [key]: value })),
      // One property malformed, the others valid.
      fc
        .tuple(validOne, fc.constantFrom(...Object.keys(properties), 'body'))
        .chain(([object, key]) =>
          malformed(properties[key] ?? {}, key).map((value) => ({ ...object, [key]: value })),
        ),
    ];
    if (required.length > 0)
      variants.push(
        fc.tuple(validOne, fc.constantFrom(...required)).map(([object, missing]) => {
          const { [missing]: _, ...rest } = object;
          return rest;
        }),
      );
    return fc.oneof(...variants);
  }

  function malformedOwn(schema: JsonSchema): fc.Arbitrary<unknown> {
    const types = typesOf(schema);
    const variants: fc.Arbitrary<unknown>[] = [
      wrongTypes(types),
      fc.constantFrom(10, 100, 1_000).map((depth) => nested(depth)),
    ];
    if (types.includes('string')) variants.push(hostileText);
    if (types.includes('object') && schema.properties !== undefined) variants.push(malformedObject(schema));
    if (types.includes('array'))
      variants.push(fc.array(malformed(schema.items ?? {}), { minLength: 1, maxLength: 3 }));
    return fc.oneof(...variants);
  }

  function malformed(schema: JsonSchema, _name?: string): fc.Arbitrary<unknown> {
    return malformedOwn(resolve(schema));
  }

  return {
    valid,
    boundary,
    malformed,
    any: (schema, name) =>
      fc.oneof(
        { weight: 5, arbitrary: valid(schema, name) },
        { weight: 2, arbitrary: boundary(schema, name) },
        { weight: 3, arbitrary: malformed(schema, name) },
      ),
  };
}
