/** JSON schemas as the API and the sites use them: their type, and builders of the shapes that recur. */

/** A JSON schema, with the keywords this app reads typed. */
export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly [keyword: string]: unknown;
}

/** An object schema with its properties named. */
export interface ObjectSchema extends JsonSchema {
  readonly properties: Readonly<Record<string, JsonSchema>>;
}

export const uuid: JsonSchema = { type: 'string', format: 'uuid' };

export const date: JsonSchema = {
  type: 'string',
  format: 'date',
  description: 'A calendar date, yyyy-mm-dd.',
};

export const price: JsonSchema = {
  type: 'number',
  minimum: 0,
  maximum: 50_000,
  description: 'In currency units with at most 2 decimals, e.g. 199.5.',
};

export const nullable = (schema: JsonSchema): JsonSchema => ({
  ...schema,
  type: [schema.type as string, 'null'],
});

/** An object of exactly these properties (`required`: all of them unless told). */
export const object = <P extends Record<string, JsonSchema>>(
  properties: P,
  required: readonly string[] = Object.keys(properties),
) => ({ type: 'object', additionalProperties: false, required, properties }) as const;

export const arrayOf = (items: JsonSchema, maxItems?: number): JsonSchema => ({
  type: 'array',
  items,
  ...(maxItems === undefined ? {} : { maxItems }),
});
