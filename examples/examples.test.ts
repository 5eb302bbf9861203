// Runs every example program under examples/<package>/ so that none can rot: each must exit 0 within its time limit
// and print every line of its header's "Prints:" block (in that order, other lines may come between).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

/** The lines an example promises to print: the `// ` lines after `// Prints:` in its header comment. */
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

function examples(): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(here)) {
    const folder = join(here, entry);
    if (entry === 'node_modules' || !statSync(folder).isDirectory()) continue;
    for (const file of readdirSync(folder)) if (file.endsWith('.ts')) found.push(join(folder, file));
  }
  return found.sort();
}

describe('examples', () => {
  for (const file of examples()) {
    const name = relative(here, file);
    it(`${name} runs and prints what its header says`, async () => {
      const expected = expectedLines(readFileSync(file, 'utf8'));
      assert.ok(expected.length > 0, `${name} has no "// Prints:" block`);
      const { stdout } = await run(
        process.execPath,
        ['--conditions=stratus-source', '--import', 'tsx', file],
        { cwd: root, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
      );
      let from = 0;
      const printed = stdout.split('\n');
      for (const line of expected) {
        const at = printed.indexOf(line, from);
        assert.notEqual(
          at,
          -1,
          `${name} did not print ${JSON.stringify(line)} (after line ${from}); it printed:\n${stdout}`,
        );
        from = at + 1;
      }
    });
  }
});
