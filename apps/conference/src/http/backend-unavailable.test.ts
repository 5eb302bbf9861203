import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WrongExpectedVersionError } from '@stratus/eventsourcing';
import { freePort } from '@stratus/testkit';
import pg from 'pg';
import { errorResponse } from './api/errors.js';
import { BackendUnavailableError, isBackendUnavailable, UNAVAILABLE_MESSAGE } from './backend-unavailable.js';

/** A DatabaseError as pg raises it for an ErrorResponse of the server with this SQLSTATE. */
function databaseError(code: string, message: string): Error {
  const error = new pg.DatabaseError(message, message.length, 'error');
  error.code = code;
  return error;
}

/** What pg raises when nothing listens where the database should be. */
async function refusedConnection(): Promise<unknown> {
  const client = new pg.Client({ host: '127.0.0.1', port: await freePort(), user: 'nobody' });
  return client.connect().then(
    () => assert.fail('connected to a port nothing listens on'),
    (error: unknown) => error,
  );
}

describe('a request that finds the database out of reach', () => {
  test('is told apart from a request the database refused', async () => {
    const unavailable: [string, unknown][] = [
      ['connection refused', await refusedConnection()],
      [
        'shut down by the operator',
        databaseError('57P01', 'terminating connection due to administrator command'),
      ],
      ['starting up', databaseError('57P03', 'the database system is starting up')],
      ['connection failure', databaseError('08006', 'connection failure')],
      ['connection lost mid-query', new Error('Connection terminated unexpectedly')],
      ['wrapped', new Error('could not read the stream', { cause: new Error('Connection terminated') })],
      ['the webhook said so', new BackendUnavailableError()],
    ];
    for (const [what, error] of unavailable) assert.equal(isBackendUnavailable(error), true, what);
    const refused: [string, unknown][] = [
      ['unique violation', databaseError('23505', 'duplicate key value violates unique constraint')],
      ['query cancelled', databaseError('57014', 'canceling statement due to statement timeout')],
      ['a concurrent write', new WrongExpectedVersionError('order-1', 1, 2)],
      ['a bug', new TypeError("Cannot read properties of undefined (reading 'status')")],
      ['not an error', 'ECONNREFUSED'],
    ];
    for (const [what, error] of refused) assert.equal(isBackendUnavailable(error), false, what);
  });

  test('answers 503 with the message to try again, not 500', async () => {
    assert.deepEqual(errorResponse(await refusedConnection()), {
      status: 503,
      body: { error: UNAVAILABLE_MESSAGE },
    });
    assert.deepEqual(errorResponse(new TypeError('a bug')), {
      status: 500,
      body: { error: 'Internal server error.' },
    });
  });
});
