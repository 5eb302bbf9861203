// A fresh project in a temporary directory outside the monorepo, as a user would make it: `npm install` of the
// tarballs (no workspace links), run on one Node binary. First the libraries alone, which must load without any
// optional peer; then the peers, a type check of a consumer under NodeNext resolution, one example per package, and
// the stratus command through npx.
import { type ExecFileSyncOptions, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { PackedPackage } from './tarballs.js';

const project = new URL('./project/', import.meta.url).pathname;

/** Packages the examples install beside the tarballs: the optional peers and the types a TypeScript user adds. */
const peers = ['pg', 'ioredis', '@opentelemetry/api', '@types/node', '@types/pg', '@types/better-sqlite3'];

export interface ConsumerOptions {
  /** The monorepo, whose TypeScript type-checks the consumer. */
  readonly root: string;
  /** A directory outside the monorepo to make the project in. */
  readonly parent: string;
  readonly node: string;
  readonly packages: readonly PackedPackage[];
  /** Version of each peer to install, by name. */
  readonly versions: ReadonlyMap<string, string>;
}

export function checkConsumer({ root, parent, node, packages, versions }: ConsumerOptions): void {
  const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const dir = join(parent, `consumer-node-${nodeVersion}`);
  mkdirSync(dir);
  console.log(`\n--- Fresh project on Node ${nodeVersion}: ${dir}`);
  // npm, npx and the stratus bin run on this Node. The monorepo's npm_* variables (set by `npm run`) stay behind.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('npm_')));
  env.PATH = `${dirname(node)}:${env.PATH}`;
  const run = (file: string, args: string[], options: ExecFileSyncOptions = {}) =>
    execFileSync(file, args, { cwd: dir, env, stdio: 'inherit', ...options });
  const npmInstall = (specs: string[]) =>
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...specs]);

  mkdirSync(join(dir, 'tarballs'));
  const tarball = (p: PackedPackage) => {
    cpSync(p.tarball, join(dir, 'tarballs', basename(p.tarball)));
    return `./tarballs/${basename(p.tarball)}`;
  };
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'stratus-consumer', private: true, type: 'module' }, null, 2)}\n`,
  );

  // The testkit depends on pg and ioredis, and the cli on the testkit: they come second.
  const withPeers = new Set(['@stratus/testkit', '@stratus/cli']);
  npmInstall(packages.filter((p) => !withPeers.has(p.name)).map(tarball));
  cpSync(join(project, 'no-peers.js'), join(dir, 'no-peers.js'));
  run(node, ['no-peers.js']);

  // better-sqlite3 where node:sqlite is missing (Node 20): its native build is for the Node that runs npm here.
  const driver = lacksNodeSqlite(node) ? ['better-sqlite3'] : [];
  npmInstall([
    ...packages.filter((p) => withPeers.has(p.name)).map(tarball),
    ...[...peers, ...driver].map((name) => `${name}@${pinned(versions, name)}`),
  ]);

  cpSync(join(project, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  cpSync(join(project, 'src'), join(dir, 'src'), { recursive: true });
  run(node, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json']);
  run(node, ['dist/examples.js']);

  const help = run('npx', ['--no-install', 'stratus', '--help'], { encoding: 'utf8', stdio: 'pipe' });
  if (!String(help).startsWith('Usage: stratus')) throw new Error(`npx stratus --help printed:\n${help}`);
  console.log('npx stratus --help: prints the usage');
  run('npx', ['--no-install', 'stratus', 'queues', '--backend', 'memory:']);
}

function pinned(versions: ReadonlyMap<string, string>, name: string): string {
  const version = versions.get(name);
  if (version === undefined) throw new Error(`${name} is not in the monorepo's lockfile`);
  return version;
}

/** Whether `node` fails to load node:sqlite (execFileSync throws on a non-zero exit). */
function lacksNodeSqlite(node: string): boolean {
  try {
    execFileSync(node, ['-e', 'require("node:sqlite")'], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
}
