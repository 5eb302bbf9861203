/**
 * The OpenAPI 3.1 document of the JSON API (served at /api/openapi.json), built from the table of operations
 * (api-operations.ts) and the schemas (schemas/api-schemas.ts) the routes use.
 *
 * Request schemas stay within what Fastify's Ajv (draft-07) compiles; response schemas are documentation only and
 * use OpenAPI 3.1 (JSON Schema 2020-12) nullable types.
 */

import { type ApiOperation, operations } from './api-operations.js';
import { CONCURRENT_WRITE_MESSAGE } from './concurrent-write.js';
import { type SchemaName, schemas } from './schemas/api-schemas.js';
import { type JsonSchema, uuid } from './schemas/json-schema.js';

const PARAMETERS: Readonly<Record<string, JsonSchema>> = {
  id: uuid,
  seatTypeId: uuid,
  orderId: uuid,
  paymentId: uuid,
  position: { type: 'integer', minimum: 0 },
  slug: {
    type: 'string',
    description:
      "A conference's slug (see NewConference); a path that cannot name one is simply not found (404).",
  },
};

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: SchemaName) => ({ content: { 'application/json': { schema: ref(name) } } });

function parametersOf(operation: ApiOperation): object[] {
  const inPath = [...operation.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: PARAMETERS[name as string] ?? { type: 'string' },
  }));
  if (operation.query === undefined) return inPath;
  const query: JsonSchema = schemas[operation.query];
  const inQuery = Object.entries(query.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: query.required?.includes(name) ?? false,
    schema,
  }));
  return [...inPath, ...inQuery];
}

/** What a 429 answer carries (the abuse limits: README). */
const RATE_LIMITED_HEADERS = Object.fromEntries(
  [
    ['Retry-After', 'Seconds until the request can succeed.'],
    ['RateLimit-Limit', 'The quota of the limit that refused.'],
    ['RateLimit-Remaining', 'What is left of it (0).'],
    ['RateLimit-Reset', 'Seconds until it is whole again.'],
    ['RateLimit-Policy', 'The limit: name, quota (q) and window in seconds (w).'],
    ['RateLimit', 'The limit: name, remaining (r) and seconds to reset (t).'],
  ].map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
);

function responsesOf(operation: ApiOperation): Record<string, object> {
  const responses: Record<string, object> = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    const schema: SchemaName | undefined = response.schema ?? (Number(status) >= 400 ? 'Error' : undefined);
    responses[status] = {
      description: response.description,
      ...(response.headers === undefined
        ? {}
        : {
            headers: Object.fromEntries(
              Object.entries(response.headers).map(([name, header]) => [
                name,
                { description: header.description, schema: { type: 'string' } },
              ]),
            ),
          }),
      ...(schema === undefined ? {} : json(schema)),
    };
  }
  const error = (description: string) => ({ description, ...json('Error') });
  if (operation.body !== undefined || operation.query !== undefined || operation.method !== 'GET')
    responses['400'] ??= { description: 'Invalid input: a message per field.', ...json('ValidationError') };
  if (operation.owner === true) {
    responses['401'] ??= error('No valid owner token.');
    responses['403'] ??= error('The token is for another conference.');
  }
  if (operation.order === true)
    responses['404'] ??= error('No order has this id, or the order token is missing or wrong.');
  if (operation.path.includes('{')) responses['404'] ??= error('Nothing has this id (or slug).');
  if (operation.limit !== undefined)
    responses['429'] ??= { description: 'Too many requests from this client.' };
  // A write to what an id names appends to it, and may lose the race to other writes (concurrent-write.ts).
  if (operation.method !== 'GET' && /\{(?!slug\})\w+\}/.test(operation.path)) {
    const own = operation.responses[409]?.description;
    responses['409'] = error(
      own === undefined ? CONCURRENT_WRITE_MESSAGE : `${own} Or: ${CONCURRENT_WRITE_MESSAGE}`,
    );
  }
  for (const [status, response] of Object.entries(responses)) {
    if (status === '429')
      responses[status] = { ...response, headers: RATE_LIMITED_HEADERS, ...json('Error') };
  }
  return responses;
}

/** The OpenAPI 3.1 document of the API. */
export function openApiDocument(): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const [operationId, operation] of Object.entries(operations) as [string, ApiOperation][]) {
    const item = paths[operation.path] ?? {};
    paths[operation.path] = item;
    const parameters = parametersOf(operation);
    item[operation.method.toLowerCase()] = {
      operationId,
      summary: operation.summary,
      tags: [operation.tag],
      ...(parameters.length === 0 ? {} : { parameters }),
      ...(operation.body === undefined ? {} : { requestBody: { required: true, ...json(operation.body) } }),
      responses: responsesOf(operation),
      ...(operation.owner === true ? { security: [{ ownerToken: [] }] } : {}),
      ...(operation.order === true ? { security: [{ orderToken: [] }] } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Contoso Conference Management System API',
      version: '1.0.0',
      description:
        'Conference owners manage conferences and seat types; registrants order seats, pay and assign them. ' +
        'Prices are decimal currency units; every 400 answer is `{ error, fields }`. Every text field has a ' +
        '`maxLength` (in characters) and a `pattern`: no control characters (a description may hold tabs and line ' +
        'breaks) and no unpaired UTF-16 surrogates. An order answers only to its token; abuse limits answer 429 ' +
        'with Retry-After.',
    },
    paths,
    components: {
      schemas,
      securitySchemes: {
        ownerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The token of POST /api/owner/login, valid for one conference.',
        },
        orderToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The orderToken of placing the order or of GET /api/orders/find, valid for that order: without it, 404.',
        },
      },
    },
  };
}
