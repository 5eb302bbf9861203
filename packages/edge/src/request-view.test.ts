import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizePath } from './request-view.js';

describe('normalizePath', () => {
  it('resolves dot segments, also percent-encoded ones, and merges repeated slashes', () => {
    const cases: [string, string][] = [
      ['/a/b', '/a/b'],
      ['/a/./b', '/a/b'],
      ['/a/../b', '/b'],
      ['/a/b/..', '/a/'],
      ['/a/b/.', '/a/b/'],
      ['/../../x', '/x'],
      ['/a/%2e%2E/b', '/b'],
      ['/a/.%2e/b', '/b'],
      ['//a///b/', '/a/b/'],
      ['/', '/'],
      ['/a/..%2fb', undefined as unknown as string],
    ];
    for (const [raw, expected] of cases) assert.equal(normalizePath(raw), expected, raw);
  });

  it('refuses targets that are not paths and encoded separators', () => {
    for (const raw of ['', '*', 'http://x/a', 'a/b', '/a%2Fb', '/a%5cb', '/a\\b', '/a%00']) {
      assert.equal(normalizePath(raw), undefined, raw);
    }
  });

  it('keeps other percent-encodings as they are', () => {
    assert.equal(normalizePath('/caf%C3%A9/a%20b'), '/caf%C3%A9/a%20b');
  });
});
