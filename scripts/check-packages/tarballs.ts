// Packs the publishable workspaces and checks what each tarball holds: everything its package.json and its own
// imports need, and none of the test code (tests, contract suites, the crash harness, fixtures), which imports
// node:test and @stratus/testkit, dev dependencies a user does not get.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

export interface PackageJson {
  name: string;
  version: string;
  private?: boolean;
  workspaces?: string[];
  bin?: Record<string, string>;
  exports?: unknown;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export interface PackedPackage {
  readonly name: string;
  readonly dir: string;
  readonly manifest: PackageJson;
  /** The tarball's path. */
  readonly tarball: string;
  /** Paths inside the tarball, relative to the package directory. */
  readonly files: readonly string[];
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as PackageJson;

/** Files no tarball may hold, with the reason. Names are matched generously: test files are being renamed. */
const forbidden: readonly [RegExp, string][] = [
  [/\.test[.-]/, 'a test file'],
  [/contract/i, 'a contract suite'],
  [/(^|\/)crash\//, 'the crash harness'],
  [/(^|\/)fixtures\//, 'a test fixture'],
  [/^src\//, 'TypeScript source'],
  [/\.tsbuildinfo$/, 'build state'],
  [/\.map$/, 'a source map naming sources that are not shipped'],
];

/** The workspaces of the monorepo at `root` that are not private, in workspace order. */
export function publishableWorkspaces(root: string): { dir: string; manifest: PackageJson }[] {
  return (readJson(join(root, 'package.json')).workspaces ?? [])
    .map((workspace) => ({
      dir: join(root, workspace),
      manifest: readJson(join(root, workspace, 'package.json')),
    }))
    .filter(({ manifest }) => manifest.private !== true);
}

export function pack(dir: string, destination: string): PackedPackage {
  const [result] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', destination], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  ) as { name: string; filename: string; files: { path: string }[] }[];
  if (result === undefined) throw new Error(`npm pack in ${dir} returned nothing`);
  return {
    name: result.name,
    dir,
    manifest: readJson(join(dir, 'package.json')),
    tarball: join(destination, result.filename),
    files: result.files.map((f) => f.path),
  };
}

/** The files that exports and bin name (the stratus-source condition points at sources, which stay home). */
function namedFiles(manifest: PackageJson): string[] {
  const out: string[] = [];
  const walk = (value: unknown, condition?: string) => {
    if (typeof value === 'string') {
      if (condition !== 'stratus-source') out.push(value);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) walk(inner, key);
    }
  };
  walk(manifest.exports);
  walk(manifest.bin);
  return out.map((path) => normalize(path));
}

/** The problems of one tarball; empty when it is fine. */
export function inspect(packed: PackedPackage): string[] {
  const problems: string[] = [];
  const files = new Set(packed.files);
  for (const file of packed.files) {
    for (const [pattern, what] of forbidden) if (pattern.test(file)) problems.push(`${file} is ${what}`);
  }
  for (const file of ['package.json', 'LICENSE', 'CHANGELOG.md', ...namedFiles(packed.manifest)]) {
    if (!files.has(file)) problems.push(`${file} is missing`);
  }
  const declared = new Set([
    ...Object.keys(packed.manifest.dependencies ?? {}),
    ...Object.keys(packed.manifest.peerDependencies ?? {}),
  ]);
  for (const file of packed.files) {
    if (!/\.(js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(join(packed.dir, file), 'utf8');
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const problem = checkImport(specifier, file, files, declared);
      if (problem !== undefined) problems.push(`${file} imports ${specifier}: ${problem}`);
    }
  }
  return problems;
}

function checkImport(
  specifier: string,
  file: string,
  files: ReadonlySet<string>,
  declared: ReadonlySet<string>,
): string | undefined {
  if (specifier.startsWith('.')) {
    const target = normalize(join(dirname(file), specifier));
    const candidates = file.endsWith('.d.ts') ? [target, target.replace(/\.js$/, '.d.ts')] : [target];
    return candidates.some((c) => files.has(c)) ? undefined : 'not in the tarball';
  }
  if (specifier.startsWith('node:test')) return 'the test runner';
  if (specifier.startsWith('node:')) return undefined;
  const name = specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
  return declared.has(name) ? undefined : 'neither a dependency nor a peer dependency';
}
