import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { derivedId, deterministicId } from './ids.js';

const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('deterministicId', () => {
  it('is a stable UUID-shaped id that depends on every part and where parts split', () => {
    const id = deterministicId('registration', 'o-1', 'e-1', 'command:0');
    assert.match(id, UUID_V8);
    assert.equal(deterministicId('registration', 'o-1', 'e-1', 'command:0'), id);
    assert.notEqual(deterministicId('registration', 'o-1', 'e-1', 'command:1'), id);
    assert.notEqual(deterministicId('ab', 'c'), deterministicId('a', 'bc'));
  });
});

describe('derivedId', () => {
  it('is stable, depends on the source and every part, and is the deterministic id of an untimed source', () => {
    const source = uuidv7(1_700_000_000_000);
    const id = derivedId(source, 'event', '0');
    assert.match(id, UUID_V8);
    assert.equal(derivedId(source, 'event', '0'), id);
    assert.notEqual(derivedId(source, 'event', '1'), id);
    assert.notEqual(
      derivedId(uuidv7(1_700_000_000_000), 'event', '0'),
      id,
      'another source of the same moment',
    );
    assert.equal(derivedId('order-1', 'event', '0'), deterministicId('order-1', 'event', '0'));
  });

  it('keeps the milliseconds of a version 7 source, through any number of derivations', () => {
    const at = 1_700_000_000_123;
    const source = uuidv7(at);
    const first = derivedId(source, 'command');
    const second = derivedId(first, 'event', '0');
    const millis = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    assert.equal(millis(first), at);
    assert.equal(millis(second), at);
    // Sorted by their sources' times, as the sources are.
    const later = derivedId(uuidv7(at + 1), 'command');
    assert.ok(first < later && second < later);
  });
});
