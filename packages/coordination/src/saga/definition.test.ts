import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff, InvalidOptionsError } from '@stratus/core';
import { compileSaga, defineSaga, type SagaDefinition } from './definition.js';
import { InvalidSagaDefinitionError } from './errors.js';

const noop = () => {};
const steps = [
  { name: 'a', do: noop, undo: noop },
  { name: 'b', do: noop },
  { name: 'c', do: noop, undo: noop },
  { name: 'd', do: noop, undo: noop },
];

describe('saga definitions', () => {
  it('compensate in reverse by default, skipping steps without an undo', () => {
    assert.deepEqual(compileSaga({ name: 'x', steps }).stages, [['d'], ['c'], ['a']]);
  });

  it('compensate all at once when parallel, or in the stages a custom order lists', () => {
    assert.deepEqual(compileSaga({ name: 'x', steps, compensation: 'parallel' }).stages, [['a', 'c', 'd']]);
    assert.deepEqual(compileSaga({ name: 'x', steps, compensation: ['c', ['a', 'd']] }).stages, [
      ['c'],
      ['a', 'd'],
    ]);
  });

  it('fill in the default retry policies and keep the given ones', () => {
    const backoff = constantBackoff(5);
    const saga = compileSaga({
      name: 'x',
      steps: [
        { name: 'a', do: noop, retry: { maxAttempts: 7, backoff }, undoRetry: { maxAttempts: Infinity } },
      ],
    });
    const step = saga.steps[0];
    assert.equal(step?.retry.maxAttempts, 7);
    assert.equal(step?.retry.backoff, backoff);
    assert.equal(step?.undoRetry.maxAttempts, Infinity);
    assert.equal(step?.undoRetry.backoff.delay(1, 0), 200, 'the undo default backoff');
  });

  it('refuse invalid definitions with InvalidSagaDefinitionError naming the problem', () => {
    const bad: [unknown, RegExp][] = [
      [{ name: '', steps }, /name/],
      [{ name: 'has space', steps }, /name/],
      [{ name: 'x', steps: [] }, /at least one step/],
      [{ name: 'x', steps: [null] }, /steps\[0\]/],
      [
        {
          name: 'x',
          steps: [
            { name: 'a', do: noop },
            { name: 'a', do: noop },
          ],
        },
        /used twice/,
      ],
      [{ name: 'x', steps: [{ name: 'a' }] }, /do: expected a function/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, undo: 'no' }] }, /undo/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, timeoutMs: 0 }] }, /timeoutMs/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, retry: { maxAttempts: 0 } }] }, /maxAttempts/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, retry: { backoff: 5 } }] }, /backoff/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, undoRetry: { retryable: true } }] }, /retryable/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, undoOnFailure: true }] }, /has no undo/],
      [{ name: 'x', steps: [{ name: 'a', do: noop, undo: noop, undoOnFailure: 1 }] }, /boolean/],
      [{ name: 'x', steps, compensation: 'sideways' }, /compensation/],
      [{ name: 'x', steps, compensation: ['a', 'c'] }, /missing from it: d/],
      [{ name: 'x', steps, compensation: ['a', 'b', 'c', 'd'] }, /"b" is not a step with an undo/],
      [{ name: 'x', steps, compensation: ['a', ['c', 'a'], 'd'] }, /listed twice/],
      [{ name: 'x', steps, compensation: ['a', [], 'c', 'd'] }, /non-empty/],
    ];
    for (const [definition, message] of bad) {
      assert.throws(
        () => defineSaga(definition as SagaDefinition<unknown>),
        (error: unknown) => error instanceof InvalidSagaDefinitionError && message.test(error.message),
        JSON.stringify(definition),
      );
    }
    assert.throws(() => compileSaga(null as never), InvalidOptionsError);
  });
});
