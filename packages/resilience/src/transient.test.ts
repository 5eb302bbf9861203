import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OperationCancelledError } from '@stratus/core';
import { BrokenCircuitError, BulkheadRejectedError, TimeoutError } from './errors.js';
import { httpStatusOf, isTransientError, isTransientResult, retryAfterMs } from './transient.js';

const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${status}`), { status, headers });

describe('transient-fault classifier', () => {
  it('treats 408/429/500/502/503/504 as transient and never 400/401/403/404', () => {
    for (const status of [408, 429, 500, 502, 503, 504])
      assert.equal(isTransientError(httpError(status)), true, `${status}`);
    for (const status of [400, 401, 403, 404, 409, 422, 501])
      assert.equal(isTransientError(httpError(status)), false, `${status}`);
  });

  it('reads the status from status, statusCode or response.status', () => {
    assert.equal(httpStatusOf({ statusCode: 503 }), 503);
    assert.equal(httpStatusOf({ response: { status: 429 } }), 429);
    assert.equal(httpStatusOf({ status: '503' }), undefined);
    assert.equal(httpStatusOf(null), undefined);
  });

  it('treats network errors as transient, also when wrapped as a cause (fetch)', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    assert.equal(isTransientError(reset), true);
    assert.equal(isTransientError(new TypeError('fetch failed', { cause: reset })), true);
    assert.equal(isTransientError(Object.assign(new Error('nope'), { code: 'ENOENT' })), false);
    assert.equal(isTransientError(new TimeoutError(10)), true);
  });

  it('never retries cancellations or policy rejections', () => {
    assert.equal(isTransientError(new OperationCancelledError('stop')), false);
    assert.equal(isTransientError(new BrokenCircuitError('open', undefined, 0)), false);
    assert.equal(isTransientError(new BulkheadRejectedError('full', 1, 0)), false);
    assert.equal(isTransientError(new Error('plain')), false);
  });

  it('classifies response-like results by status', () => {
    assert.equal(isTransientResult({ status: 503 }), true);
    assert.equal(isTransientResult({ status: 200 }), false);
    assert.equal(isTransientResult(42), false);
  });

  it('parses Retry-After as seconds or an HTTP date, from plain headers or a Headers object', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    assert.equal(retryAfterMs(httpError(429, { 'retry-after': '3' }), now), 3000);
    assert.equal(retryAfterMs({ status: 503, headers: new Headers({ 'Retry-After': '1.5' }) }, now), 1500);
    const date = new Date(now + 5000).toUTCString();
    assert.equal(retryAfterMs(httpError(503, { 'retry-after': date }), now), 5000);
    assert.equal(retryAfterMs(httpError(503, { 'retry-after': new Date(now - 5000).toUTCString() }), now), 0);
    assert.equal(retryAfterMs(httpError(503, { 'retry-after': 'soon' }), now), undefined);
    assert.equal(retryAfterMs({ retryAfterMs: 250 }, now), 250);
    assert.equal(retryAfterMs(httpError(503), now), undefined);
  });
});
