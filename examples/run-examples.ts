// Runs the example programs of one examples/<package>/ folder as tests, so that none can rot: each must exit 0 within
// its time limit and print every line of its header's "Prints:" block (in that order, other lines may come between).
// One test file per folder (examples/<package>.test.ts) keeps each file well inside the runner's per-file timeout.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

/** The lines an example promises to print: the `//   ` lines after `// Prints:` in its header comment. */
export function expectedLines(source: string): string[] {
  const lines = source.split('\n');
  const start = lines.findIndex((line) => line.trim() === '// Prints:');
  if (start === -1) return [];
  const expected: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('//   ')) break;
    expected.push(line.slice('//   '.length));
  }
  return expected;
}

/** The index in `printed` after the last expected line, or the expected line that is missing. */
export function findInOrder(printed: readonly string[], expected: readonly string[]): { missing?: string } {
  let from = 0;
  for (const line of expected) {
    const at = printed.indexOf(line, from);
    if (at === -1) return { missing: line };
    from = at + 1;
  }
  return {};
}

/** The example folders: every folder of examples/ but node_modules. */
export function exampleFolders(): string[] {
  return readdirSync(here, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== 'node_modules')
    .map((entry) => entry.name)
    .sort();
}

/** Defines one test per example program of examples/<folder>/, two running at a time. */
export function testExamplesIn(folder: string): void {
  const files = readdirSync(join(here, folder))
    .filter((file) => file.endsWith('.ts'))
    .sort();
  describe(`examples/${folder}`, { concurrency: 2 }, () => {
    it('has examples', () => assert.ok(files.length > 0));
    for (const file of files) {
      const path = join(here, folder, file);
      it(`${file} runs and prints what its header says`, async () => {
        const expected = expectedLines(readFileSync(path, 'utf8'));
        assert.ok(expected.length > 0, `${file} has no "// Prints:" block`);
        const { stdout } = await run(
          process.execPath,
          ['--conditions=stratus-source', '--import', 'tsx', path],
          {
            cwd: root,
            timeout: 30_000,
            env: { ...process.env, NO_COLOR: '1' },
          },
        );
        const { missing } = findInOrder(stdout.split('\n'), expected);
        assert.equal(
          missing,
          undefined,
          `${file} did not print ${JSON.stringify(missing)} in order; it printed:\n${stdout}`,
        );
      });
    }
  });
}
