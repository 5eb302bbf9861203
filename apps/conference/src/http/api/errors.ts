/**
 * The API's error answers: `{ error }`, and `{ error, fields }` with a message per offending field for every 400
 * (the domain's validation errors, the schema validation of bodies and query strings, and JSON that does not parse).
 */
import type { FastifySchemaValidationError } from 'fastify';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { TooManyRequestsError } from '../limits/too-many-requests.js';

/** An answer other than the domain's errors and the abuse limits' (401, 403); `challenge` asks for a bearer token. */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly challenge: boolean;
  constructor(statusCode: number, message: string, challenge = false) {
    super(message);
    this.statusCode = statusCode;
    this.challenge = challenge;
  }
}

type Path = readonly (string | number)[];
type Fields = Record<string, string>;

function label(path: Path): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

/** A problem at `path`, kept under its top-level field (the first problem of a field wins). */
function report(fields: Fields, path: Path, message: string): void {
  const field = typeof path[0] === 'string' ? path[0] : 'body';
  fields[field] ??= `${path.length === 0 ? 'The body' : label(path)} ${message}.`;
}

function schemaMessage(error: FastifySchemaValidationError): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'type':
      return `must be ${/^[aeiou]/.test(String(params.type)) ? 'an' : 'a'} ${String(params.type)}`;
    case 'minimum':
      return `must be at least ${String(params.limit)}`;
    case 'maximum':
      return `must be at most ${String(params.limit)}`;
    case 'minLength':
      return `must be at least ${String(params.limit)} characters long`;
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`;
    case 'maxItems':
      return `must have at most ${String(params.limit)} items`;
    case 'format':
      return params.format === 'date'
        ? 'must be a date written yyyy-mm-dd'
        : `must be a valid ${params.format}`;
    case 'additionalProperties':
      return 'is not allowed';
    default:
      return error.message ?? 'is not valid';
  }
}

/** Ajv's errors by field (the property of the body or the query parameter). */
function schemaFields(errors: readonly FastifySchemaValidationError[]): Fields {
  const fields: Fields = {};
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
    report(fields, path, schemaMessage(error));
  }
  return fields;
}

export function errorResponse(error: unknown): { status: number; body: object } {
  if (error instanceof ValidationError)
    return { status: 400, body: { error: error.message, fields: { ...error.fields } } };
  if (error instanceof NotFoundError) return { status: 404, body: { error: error.message } };
  if (error instanceof ConflictError || error instanceof InvalidOperationError)
    return { status: 409, body: { error: error.message } };
  if (error instanceof HttpError) return { status: error.statusCode, body: { error: error.message } };
  if (error instanceof TooManyRequestsError) return { status: 429, body: { error: error.message } };
  if (typeof error === 'object' && error !== null) {
    const { validation, statusCode, message } = error as {
      validation?: FastifySchemaValidationError[];
      statusCode?: number;
      message?: string;
    };
    if (Array.isArray(validation))
      return { status: 400, body: { error: 'Validation failed.', fields: schemaFields(validation) } };
    if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
      if (statusCode !== 400) return { status: statusCode, body: { error: message ?? 'Bad request.' } };
      const json =
        error instanceof SyntaxError || (error as { code?: string }).code === 'FST_ERR_CTP_INVALID_JSON_BODY';
      return {
        status: 400,
        body: { error: json ? 'The body is not valid JSON.' : (message ?? 'Bad request.'), fields: {} },
      };
    }
  }
  return { status: 500, body: { error: 'Internal server error.' } };
}
