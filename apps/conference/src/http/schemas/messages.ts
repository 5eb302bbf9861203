/**
 * Schema errors as the API's `fields` and the forms' field errors show them: one message per top-level field (the
 * property of the body, the query parameter or the form field; the first problem of a field wins).
 */
import { PATTERN_MESSAGES } from './text.js';

/** What this module reads of an Ajv error (Fastify's validation errors are Ajv's). */
export interface SchemaError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: object;
  readonly message?: string | undefined;
}

type Path = readonly (string | number)[];

function label(path: Path): string {
  if (path.length === 0) return 'The body';
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

function message(error: SchemaError, path: Path): string {
  const params = error.params as Record<string, unknown>;
  const what = label(path);
  const says = (text: string) => `${what} ${text}.`;
  switch (error.keyword) {
    case 'required':
      return says('is required');
    case 'type':
      return says(`must be ${/^[aeiou]/.test(String(params.type)) ? 'an' : 'a'} ${String(params.type)}`);
    case 'minimum':
      return says(`must be at least ${String(params.limit)}`);
    case 'maximum':
      return says(`must be at most ${String(params.limit)}`);
    case 'minLength':
      return says(`must be at least ${String(params.limit)} characters long`);
    case 'maxLength':
      return says(`must be at most ${String(params.limit)} characters long`);
    case 'maxItems':
      return says(`must have at most ${String(params.limit)} items`);
    case 'pattern':
      return PATTERN_MESSAGES[String(params.pattern)]?.(what) ?? says(error.message ?? 'is not valid');
    case 'format':
      return says(
        params.format === 'date' ? 'must be a date written yyyy-mm-dd' : `must be a valid ${params.format}`,
      );
    case 'additionalProperties':
      return says('is not allowed');
    default:
      return says(error.message ?? 'is not valid');
  }
}

/** The errors' messages by field. */
export function fieldProblems(errors: readonly SchemaError[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const error of errors) {
    const path: (string | number)[] = error.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'required' && typeof params.missingProperty === 'string')
      path.push(params.missingProperty);
    if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string')
      path.push(params.additionalProperty);
    const field = typeof path[0] === 'string' ? path[0] : 'body';
    fields[field] ??= message(error, path);
  }
  return fields;
}
