import assert from 'node:assert/strict';
import { test } from 'node:test';
import { operations } from '../api-operations.js';
import { openApiDocument } from '../openapi.js';
import { OpenApiDocumentError, readOpenApi } from './openapi-operations.js';

test("readOpenApi reads every operation of the app's document: parameters, body, bearer security", () => {
  const document = readOpenApi(openApiDocument());
  assert.deepEqual(
    document.operations.map((operation) => operation.id).sort(),
    Object.keys(operations).sort(),
  );
  const byId = new Map(document.operations.map((operation) => [operation.id, operation]));

  const assignSeat = byId.get('assignSeat');
  assert.equal(assignSeat?.method, 'PUT');
  assert.equal(assignSeat?.path, '/api/orders/{orderId}/assignments/{position}');
  assert.deepEqual(
    assignSeat?.parameters.map((p) => [p.in, p.name, p.required]),
    [
      ['path', 'orderId', true],
      ['path', 'position', true],
    ],
  );
  assert.deepEqual([...(assignSeat?.body.keys() ?? [])], ['application/json']);
  // A body schema is a reference into the components, which `resolve` follows.
  const body = document.resolve(assignSeat?.body.get('application/json') ?? {});
  assert.deepEqual(Object.keys(body.properties ?? {}), ['firstName', 'lastName', 'email']);

  const findOrder = byId.get('findOrder');
  assert.deepEqual(
    findOrder?.parameters.map((p) => [p.in, p.name, p.required]),
    [
      ['query', 'email', true],
      ['query', 'accessCode', true],
    ],
  );
  assert.equal(findOrder?.body.size, 0);
  assert.deepEqual(
    document.operations
      .filter((operation) => operation.bearer)
      .map((operation) => operation.id)
      .sort(),
    Object.entries(operations)
      .filter(
        ([, operation]) =>
          ('owner' in operation && operation.owner) || ('order' in operation && operation.order),
      )
      .map(([id]) => id)
      .sort(),
  );
});

test('readOpenApi refuses what is not an OpenAPI 3 document, and references it cannot follow', () => {
  assert.throws(() => readOpenApi({ swagger: '2.0' }), OpenApiDocumentError);
  const remote = {
    openapi: '3.1.0',
    paths: { '/a': { get: { parameters: [{ $ref: 'https://example.com/p.json' }] } } },
  };
  assert.throws(() => readOpenApi(remote), /Only local references/);
});
