// Checks the example runner itself, and that every examples/<package>/ folder has its test file.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { exampleFolders, expectedLines, findInOrder } from './run-examples.js';

describe('example runner', () => {
  it('reads the "Prints:" block of a header', () => {
    const source = '// What it is.\n// Prints:\n//   one\n//   two\n//\nimport x from "y";\n';
    assert.deepEqual(expectedLines(source), ['one', 'two']);
    assert.deepEqual(expectedLines('// no block\n'), []);
  });

  it('wants the expected lines in order, with other lines allowed between', () => {
    assert.deepEqual(findInOrder(['a', 'x', 'b'], ['a', 'b']), {});
    assert.deepEqual(findInOrder(['b', 'a'], ['a', 'b']), { missing: 'b' });
    assert.deepEqual(findInOrder(['a'], ['a', 'c']), { missing: 'c' });
  });

  it('has a test file for every example folder', () => {
    const missing = exampleFolders().filter(
      (folder) => !existsSync(new URL(`./${folder}.test.ts`, import.meta.url)),
    );
    assert.deepEqual(missing, []);
  });
});
