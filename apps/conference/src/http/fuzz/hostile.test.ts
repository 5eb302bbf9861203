import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeAnyText } from './hostile.js';

test('encodeAnyText percent-encodes any text, lone surrogates as bytes no decoder takes', () => {
  assert.equal(encodeAnyText('é /?&='), '%C3%A9%20%2F%3F%26%3D');
  assert.equal(encodeAnyText('\u{1f600}'), '%F0%9F%98%80');
  assert.equal(encodeAnyText('a\ud800b\udfff\u{1f600}'), 'a%ED%A0%80b%ED%BF%BF%F0%9F%98%80');
  assert.throws(() => decodeURIComponent(encodeAnyText('\ud800')), URIError);
  assert.equal(decodeURIComponent(encodeAnyText('x\u0000y')), 'x\u0000y');
});
