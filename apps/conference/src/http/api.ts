/**
 * The JSON API (a Fastify plugin): the owner's side (conferences, seat types, publishing, orders) behind a bearer
 * token, and the registrant's side mirroring the public web flow (order seats, wait for the reservation, name the
 * registrant, pay or confirm a free order, find the order, assign seats). Routes, schemas and the OpenAPI document
 * come from one table (openapi.ts), whose request schemas are the inputs the web forms share (./schemas/inputs.ts);
 * the handlers of its operations live in ./api/, by topic.
 *
 * Writes answer once the read models show them (bounded by SETTLE_MS), so a caller's next read sees its own write;
 * the seat reservation itself stays asynchronous (202 + Location, then GET with `?wait=`).
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { errorResponse, HttpError } from './api/errors.js';
import { type OwnerTokenOptions, ownerAuth } from './api/owner-auth.js';
import { ownerConferenceHandlers } from './api/owner-conferences.js';
import { ownerSeatTypeHandlers } from './api/owner-seat-types.js';
import { paymentHandlers } from './api/payments.js';
import { registrationHandlers } from './api/registration.js';
import { seatAssignmentHandlers } from './api/seat-assignments.js';
import type { Handlers, RoutedOperationId } from './api/support.js';
import { type ApiOperation, type OperationId, openApiDocument, operations, schemas } from './openapi.js';
import { paymentWebhookRoute, simulatedProcessor } from './payment-callbacks.js';
import { apiSchemaCompiler } from './schemas/compiler.js';

export interface ApiOptions extends OwnerTokenOptions {
  readonly system: ConferenceSystem;
}

export async function apiRoutes(app: FastifyInstance, options: ApiOptions): Promise<void> {
  const { system } = options;
  const document = openApiDocument();
  const auth = ownerAuth(system, options);

  app.setValidatorCompiler(apiSchemaCompiler());
  app.setErrorHandler((error: unknown, request, reply) => {
    const { status, body } = errorResponse(error);
    if (status >= 500) request.log.error({ err: error }, 'API request failed');
    if (error instanceof HttpError && error.challenge) void reply.header('www-authenticate', 'Bearer');
    return reply.code(status).send(body);
  });

  const handlers: Handlers = {
    ...auth.handlers,
    ...ownerConferenceHandlers(system),
    ...ownerSeatTypeHandlers(system),
    ...registrationHandlers(system),
    ...paymentHandlers(system, simulatedProcessor(system, app)),
    ...seatAssignmentHandlers(system),
    async openApi() {
      return document;
    },
  };

  for (const id of Object.keys(operations) as OperationId[]) {
    const operation: ApiOperation = operations[id];
    if (operation.raw === true) continue;
    const handler = handlers[id as RoutedOperationId];
    app.route({
      method: operation.method,
      url: operation.path.replace(/\{(\w+)\}/g, ':$1'),
      schema: {
        ...(operation.body === undefined ? {} : { body: schemas[operation.body] }),
        ...(operation.query === undefined ? {} : { querystring: schemas[operation.query] }),
      },
      ...(operation.owner === true ? { onRequest: auth.ownerOnly } : {}),
      handler,
    });
  }
  // In a scope of its own: it reads JSON as text, to check the signature over it.
  await app.register(async (scope) => paymentWebhookRoute(scope, system));
}
