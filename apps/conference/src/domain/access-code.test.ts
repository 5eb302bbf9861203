import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ACCESS_CODE_PATTERN, accessCode } from './access-code.js';

describe('accessCode', () => {
  test('has the requested length and only the 32 unambiguous symbols', () => {
    assert.equal(accessCode(100).length, 100);
    for (let i = 0; i < 1000; i++) assert.match(accessCode(), ACCESS_CODE_PATTERN);
  });

  test('10,000 codes of length 100 are all distinct, and every symbol turns up', () => {
    const codes = new Set(Array.from({ length: 10_000 }, () => accessCode(100)));
    assert.equal(codes.size, 10_000);
    const symbols = new Set([...codes].join(''));
    assert.equal(symbols.size, 32);
  });
});
