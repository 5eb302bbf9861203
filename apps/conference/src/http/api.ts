/**
 * The JSON API (a Fastify plugin): the owner's side (conferences, seat types, publishing, orders) behind a bearer
 * token, and the registrant's side mirroring the public web flow (order seats, wait for the reservation, name the
 * registrant, pay or confirm a free order, find the order, assign seats), each order behind its own token. Routes,
 * schemas and the OpenAPI document come from one table (api-operations.ts), whose request schemas are the inputs
 * the web forms share (./schemas/inputs.ts), and which also says what each operation checks before its handler runs
 * (rate limit, owner token, order token); the handlers live in ./api/, by topic.
 *
 * Writes answer once the read models show them (bounded by SETTLE_MS), so a caller's next read sees its own write;
 * the seat reservation itself stays asynchronous (202 + Location, then GET with `?wait=`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { NotFoundError } from '../domain/errors.js';
import { errorResponse, HttpError } from './api/errors.js';
import { type OwnerTokenOptions, ownerAuth } from './api/owner-auth.js';
import { ownerConferenceHandlers } from './api/owner-conferences.js';
import { ownerSeatTypeHandlers } from './api/owner-seat-types.js';
import { paymentHandlers } from './api/payments.js';
import { registrationHandlers } from './api/registration.js';
import { seatAssignmentHandlers } from './api/seat-assignments.js';
import { bearerToken, type Handlers, param, type RoutedOperationId } from './api/support.js';
import { type ApiOperation, type OperationId, operations } from './api-operations.js';
import { isBackendUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from './backend-unavailable.js';
import { type AbuseLimits, abuseLimitsFor } from './limits/abuse-limits.js';
import { addRateLimitFields } from './limits/rate-limit-fields.js';
import { TooManyRequestsError } from './limits/too-many-requests.js';
import { openApiDocument } from './openapi.js';
import { isOrderToken } from './order-token.js';
import { secretOption } from './owner-token.js';
import { paymentWebhookRoute, simulatedProcessor } from './payment-callbacks.js';
import { schemas } from './schemas/api-schemas.js';
import { apiSchemaCompiler } from './schemas/compiler.js';

export interface ApiOptions extends OwnerTokenOptions {
  readonly system: ConferenceSystem;
  /** The abuse limits, shared with the web sites; default: as the system's configuration sets them. */
  readonly limits?: AbuseLimits;
}

export async function apiRoutes(app: FastifyInstance, options: ApiOptions): Promise<void> {
  const { system } = options;
  const document = openApiDocument();
  const secret = secretOption(options.ownerTokenSecret, system.config);
  const limits = options.limits ?? abuseLimitsFor(system);
  const auth = ownerAuth(system, secret, limits, options);

  /** The onRequest hook of an order's operations: its token, else the order is not found. */
  async function orderOnly(request: FastifyRequest): Promise<void> {
    const orderId = param(request, 'orderId');
    if (!isOrderToken(orderId, bearerToken(request), secret)) throw new NotFoundError('Order', orderId);
  }

  app.setValidatorCompiler(apiSchemaCompiler());
  app.setErrorHandler((error: unknown, request, reply) => {
    const { status, body } = errorResponse(error);
    if (isBackendUnavailable(error)) {
      request.log.warn({ err: error }, 'API request failed: the database is out of reach');
      void reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    } else if (status >= 500) request.log.error({ err: error }, 'API request failed');
    if (error instanceof HttpError && error.challenge) void reply.header('www-authenticate', 'Bearer');
    if (error instanceof TooManyRequestsError) addRateLimitFields(reply, error.headers);
    return reply.code(status).send(body);
  });

  const handlers: Handlers = {
    ...auth.handlers,
    ...ownerConferenceHandlers(system, auth.ownerToken),
    ...ownerSeatTypeHandlers(system),
    ...registrationHandlers(system, limits, secret),
    ...paymentHandlers(system, simulatedProcessor(system)),
    ...seatAssignmentHandlers(system),
    async openApi() {
      return document;
    },
  };

  for (const id of Object.keys(operations) as OperationId[]) {
    const operation: ApiOperation = operations[id];
    if (operation.raw === true) continue;
    const handler = handlers[id as RoutedOperationId];
    const { limit } = operation;
    const checks = [
      ...(limit === undefined
        ? []
        : [
            async (request: FastifyRequest, reply: FastifyReply) =>
              addRateLimitFields(reply, await limits.charge(limit, request.ip)),
          ]),
      ...(operation.owner === true ? [auth.ownerOnly] : []),
      ...(operation.order === true ? [orderOnly] : []),
    ];
    app.route({
      method: operation.method,
      url: operation.path.replace(/\{(\w+)\}/g, ':$1'),
      schema: {
        ...(operation.body === undefined ? {} : { body: schemas[operation.body] }),
        ...(operation.query === undefined ? {} : { querystring: schemas[operation.query] }),
      },
      ...(checks.length === 0 ? {} : { onRequest: checks }),
      handler,
    });
  }
  // In a scope of its own: it reads JSON as text, to check the signature over it.
  await app.register(async (scope) => paymentWebhookRoute(scope, system, limits));
}
