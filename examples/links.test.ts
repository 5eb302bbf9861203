// Every relative link in the project's READMEs points at a file or folder that exists, so the pattern table and the
// package pages cannot send a reader to code that moved.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';

const root = join(new URL('.', import.meta.url).pathname, '..');

/** The targets of a Markdown text's inline links `[text](target)` that are relative paths (no scheme, no anchor). */
export function relativeLinks(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const targets: string[] = [];
  for (const match of withoutCode.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = (match[1] as string).split('#')[0] as string;
    if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    targets.push(target);
  }
  return targets;
}

function readmes(): string[] {
  const found = [join(root, 'README.md'), join(root, 'bench', 'README.md')];
  for (const group of ['packages', 'apps']) {
    for (const entry of readdirSync(join(root, group))) {
      const file = join(root, group, entry, 'README.md');
      if (statSync(join(root, group, entry)).isDirectory() && existsSync(file)) found.push(file);
    }
  }
  return found.filter((file) => existsSync(file));
}

describe('README links', () => {
  it('finds relative links and leaves out addresses, anchors and code', () => {
    const text = '[a](packages/x.ts) [b](https://example.com) [c](#top) `[d](no.ts)` [e](dir/#part)';
    assert.deepEqual(relativeLinks(text), ['packages/x.ts', 'dir/']);
  });

  for (const file of readmes()) {
    it(`${relative(root, file)} links only to files that exist`, () => {
      const missing = relativeLinks(readFileSync(file, 'utf8')).filter(
        (target) => !existsSync(join(dirname(file), target)),
      );
      assert.deepEqual(missing, [], `broken links in ${relative(root, file)}`);
    });
  }
});
