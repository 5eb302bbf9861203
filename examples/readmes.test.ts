// Every ```ts block of every packages/*/README.md must be a copy of an example program (the whole file or a run of
// its lines), so that the code a reader copies is code that examples.test.ts runs and `tsc -p examples` checks.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

interface Source {
  readonly path: string;
  readonly text: string;
}

/** Trailing whitespace on each line and blank lines at either end do not count. */
function normalise(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/^\n+|\n+$/g, '');
}

/** The bodies of the ```ts fenced blocks of a Markdown text. */
export function tsBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let current: string[] | undefined;
  for (const line of markdown.split('\n')) {
    const fence = line.trim();
    if (current === undefined) {
      if (fence === '```ts' || fence === '```typescript') current = [];
    } else if (fence === '```') {
      blocks.push(normalise(current.join('\n')));
      current = undefined;
    } else {
      current.push(line);
    }
  }
  assert.equal(current, undefined, 'a ```ts block is not closed');
  return blocks;
}

/** The blocks of `markdown` that are not whole lines of any single one of `sources`. */
export function blocksNotInSources(markdown: string, sources: readonly Source[]): string[] {
  const texts = sources.map((source) => `\n${normalise(source.text)}\n`);
  return tsBlocks(markdown).filter((block) => !texts.some((text) => text.includes(`\n${block}\n`)));
}

function exampleSources(folder: string): Source[] {
  const found: Source[] = [];
  for (const entry of readdirSync(folder)) {
    const path = join(folder, entry);
    if (entry === 'node_modules') continue;
    if (statSync(path).isDirectory()) found.push(...exampleSources(path));
    else if (entry.endsWith('.ts') && !entry.endsWith('.test.ts')) {
      found.push({ path, text: readFileSync(path, 'utf8') });
    }
  }
  return found;
}

function readmes(): string[] {
  const packages = join(root, 'packages');
  return readdirSync(packages)
    .map((name) => join(packages, name, 'README.md'))
    .filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile())
    .sort();
}

describe('package READMEs', () => {
  const sources = exampleSources(here);

  for (const readme of readmes()) {
    it(`${relative(root, readme)}: every ts block is a copy of an example`, () => {
      const missing = blocksNotInSources(readFileSync(readme, 'utf8'), sources);
      assert.deepEqual(
        missing,
        [],
        `blocks found in no single file under examples/:\n\n${missing.join('\n\n')}`,
      );
    });
  }

  it('the checker refuses a block stitched from two files and accepts a run of lines from one', () => {
    const files = [
      { path: 'a.ts', text: "// header\nimport { a } from 'a';\nconsole.log(a);  \n" },
      { path: 'b.ts', text: "import { b } from 'b';\nconsole.log(b);\n" },
    ];
    const readme = [
      '# made up',
      '```ts',
      "import { a } from 'a';",
      'console.log(a);',
      '```',
      '```ts',
      'console.log(a);',
      "import { b } from 'b';",
      '```',
      '```ts',
      'log(a);',
      '```',
      '```sh',
      'not checked',
      '```',
    ].join('\n');
    assert.deepEqual(blocksNotInSources(readme, files), [
      "console.log(a);\nimport { b } from 'b';",
      'log(a);',
    ]);
  });
});
