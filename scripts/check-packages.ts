#!/usr/bin/env node
// `npm run check:packages [-- <node binary>...]`: what a user would get from npm. Builds (tsc -b), packs every
// publishable workspace, checks each tarball's contents, then installs the tarballs in a fresh project outside the
// monorepo and uses them there, once per Node binary given (default: the Node running this).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConsumer } from './check-packages/consumer.js';
import { inspect, pack, publishableWorkspaces } from './check-packages/tarballs.js';

const root = new URL('..', import.meta.url).pathname;
const nodes = process.argv.length > 2 ? process.argv.slice(2) : [process.execPath];

console.log('--- Build');
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b'], {
  cwd: root,
  stdio: 'inherit',
});

const parent = mkdtempSync(join(tmpdir(), 'stratus-check-packages-'));
console.log(`\n--- Pack (into ${parent})`);
const packages = publishableWorkspaces(root).map(({ dir }) => pack(dir, parent));
let failed = false;
for (const packed of packages) {
  const problems = inspect(packed);
  console.log(`${packed.name}: ${packed.files.length} files${problems.length > 0 ? ', PROBLEMS:' : ''}`);
  for (const problem of problems) console.log(`  ${problem}`);
  failed ||= problems.length > 0;
}
if (failed) process.exit(1);

// The peers the fresh project installs are the versions the monorepo tests with.
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string }>;
};
const versions = new Map(
  Object.entries(lock.packages).flatMap(([path, { version }]) =>
    path.startsWith('node_modules/') && version !== undefined
      ? [[path.slice('node_modules/'.length), version] as const]
      : [],
  ),
);
for (const node of nodes) checkConsumer({ root, parent, node, packages, versions });
rmSync(parent, { recursive: true, force: true });
console.log('\nPackages check passed');
