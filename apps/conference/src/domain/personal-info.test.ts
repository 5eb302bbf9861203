import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ValidationError } from './errors.js';
import { assertValidPersonalInfo, EMAIL_PATTERN } from './personal-info.js';

describe('EMAIL_PATTERN', () => {
  test("accepts what the Journey's pattern accepts", () => {
    for (const email of ['foo@bar.com', 'first.last@mail.example.co', 'a-b_c@x-y.org', 'josé@exämple.de']) {
      assert.match(email, EMAIL_PATTERN);
    }
  });

  test('refuses what it refuses, "+" included', () => {
    const invalid = [
      'foo',
      'foo@bar',
      '@bar.com',
      '.foo@bar.com',
      'foo.@bar.com',
      'foo..bar@baz.com',
      'foo bar@baz.com',
      'foo@bar.com ',
      'foo@bar..com',
      'foo@@bar.com',
      'foo+tag@bar.com',
    ];
    for (const email of invalid) assert.doesNotMatch(email, EMAIL_PATTERN);
  });

  test('refuses a long near-miss (the nested quantifier that backtracked for ages is gone)', () => {
    assert.doesNotMatch(`${'a'.repeat(100_000)}!@bar.com`, EMAIL_PATTERN);
    assert.doesNotMatch(`${'a.'.repeat(50_000)}@bar`, EMAIL_PATTERN);
  });
});

describe('assertValidPersonalInfo', () => {
  test('names every missing or malformed field at once', () => {
    assert.throws(
      () => assertValidPersonalInfo({ firstName: ' ', lastName: '', email: 'nope' }),
      (error: unknown) =>
        error instanceof ValidationError &&
        Object.keys(error.fields).sort().join() === 'email,firstName,lastName' &&
        error.fields.email === 'The provided email address is not valid.',
    );
    assert.doesNotThrow(() =>
      assertValidPersonalInfo({ firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' }),
    );
  });
});
