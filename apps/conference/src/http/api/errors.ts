/**
 * The API's error answers: `{ error }`, and `{ error, fields }` with a message per offending field for every 400
 * (the domain's validation errors, the schema validation of bodies and query strings, and JSON that does not parse),
 * 409 for a write that lost the race to another one (concurrent-write.ts), and 503 while the database is out of
 * reach (backend-unavailable.ts).
 */
import type { FastifySchemaValidationError } from 'fastify';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { isBackendUnavailable, UNAVAILABLE_MESSAGE } from '../backend-unavailable.js';
import { CONCURRENT_WRITE_MESSAGE, isConcurrentWrite } from '../concurrent-write.js';
import { TooManyRequestsError } from '../limits/too-many-requests.js';
import { fieldProblems } from '../schemas/messages.js';

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

export function errorResponse(error: unknown): { status: number; body: object } {
  if (error instanceof ValidationError)
    return { status: 400, body: { error: error.message, fields: { ...error.fields } } };
  if (error instanceof NotFoundError) return { status: 404, body: { error: error.message } };
  if (error instanceof ConflictError || error instanceof InvalidOperationError)
    return { status: 409, body: { error: error.message } };
  if (error instanceof HttpError) return { status: error.statusCode, body: { error: error.message } };
  if (error instanceof TooManyRequestsError) return { status: 429, body: { error: error.message } };
  if (isConcurrentWrite(error)) return { status: 409, body: { error: CONCURRENT_WRITE_MESSAGE } };
  if (isBackendUnavailable(error)) return { status: 503, body: { error: UNAVAILABLE_MESSAGE } };
  if (typeof error === 'object' && error !== null) {
    const { validation, statusCode, message } = error as {
      validation?: FastifySchemaValidationError[];
      statusCode?: number;
      message?: string;
    };
    if (Array.isArray(validation))
      return { status: 400, body: { error: 'Validation failed.', fields: fieldProblems(validation) } };
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
