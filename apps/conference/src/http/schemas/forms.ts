/**
 * A web form read through the schema of the same input on the API: its fields are the schema's properties, trimmed
 * ('' when missing); its text fields are checked by the schema, an empty one only when the schema requires it
 * (numbers the form parses itself, for its own messages, and the domain judges them). A form then shows each
 * field's message next to it.
 */
import { strictValidator } from './compiler.js';
import type { JsonSchema, ObjectSchema } from './json-schema.js';
import { fieldProblems } from './messages.js';

export interface FormInput<Field extends string> {
  readonly values: Readonly<Record<Field, string>>;
  /** The schema's message for each text field it refuses. */
  readonly problems: Readonly<Record<string, string>>;
}

const textParts = new WeakMap<ObjectSchema, JsonSchema>();

/** The schema of the text properties only (made once per schema). */
function textPart(schema: ObjectSchema): JsonSchema {
  let part = textParts.get(schema);
  if (part === undefined) {
    const text = Object.entries(schema.properties).filter(([, property]) => property.type === 'string');
    part = { type: 'object', properties: Object.fromEntries(text) };
    textParts.set(schema, part);
  }
  return part;
}

export function readForm<Schema extends ObjectSchema>(
  schema: Schema,
  fields: Readonly<Record<string, string | undefined>>,
): FormInput<keyof Schema['properties'] & string> {
  const values = Object.fromEntries(
    Object.keys(schema.properties).map((name) => [name, (fields[name] ?? '').trim()]),
  ) as Record<keyof Schema['properties'] & string, string>;
  const required = new Set(schema.required ?? []);
  const given = Object.entries(values).filter(([name, value]) => value !== '' || required.has(name));
  const validate = strictValidator(textPart(schema));
  const problems = validate(Object.fromEntries(given)) ? {} : fieldProblems(validate.errors ?? []);
  return { values, problems };
}
