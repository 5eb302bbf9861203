#!/usr/bin/env node
// Runs every *.test.ts under packages/, apps/, bench/ and examples/ with Node's test runner (TypeScript through tsx, workspace
// packages resolved to their sources). Starts throwaway PostgreSQL and Redis servers once for the whole run
// unless DATABASE_URL / REDIS_URL are given; suites that need a server they cannot get report themselves skipped.
//
//   run-tests.ts [--fast] [filter ...]
//
// - `npm test` (check, then every test) and `npm run test:only`: every test file, *.chaos.test.ts included.
// - `npm run test:fast` (`--fast`): every test file except *.chaos.test.ts, the slow suites that run real
//   processes and kill them (crashes, leader and workflow chaos, server restarts), for the inner loop.
// Filters keep the files whose path contains any of them, e.g. `npm run test:fast -- packages/data`.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const fast = args.includes('--fast');
const filters = args.filter((arg) => arg !== '--fast');
const CHAOS_SUFFIX = '.chaos.test.ts';

function findTests(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) findTests(path, out);
    else if (entry.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const matched = [
  ...findTests(join(root, 'packages')),
  ...findTests(join(root, 'apps')),
  ...findTests(join(root, 'bench')),
  ...findTests(join(root, 'examples')),
]
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
const files = fast ? matched.filter((f) => !f.endsWith(CHAOS_SUFFIX)) : matched;
if (fast) console.log(`Fast mode: ${matched.length - files.length} chaos suites left out.`);
if (files.length === 0) {
  console.error('No test files matched.');
  process.exit(1);
}

// The bench's tests import its peers, which have an install of their own (made here on first use).
if (files.some((f) => f.startsWith('bench/'))) (await import('./install-bench.js')).installBench();

// The testkit decides how to get each server (env URL, binaries on PATH) and why not when it cannot; under CI=true
// a missing server throws here.
const { startSharedTestServers } = await import('@stratus/testkit');
const servers = await startSharedTestServers();

// spec output reads well in a terminal and in CI logs alike; a test stuck for a minute fails instead of
// hanging the run.
const child = spawn(
  process.execPath,
  [
    '--conditions=stratus-source',
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    '--test-concurrency=2',
    '--test-timeout=60000',
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, ...servers.env } },
);
// Pass interruptions on so the tests end first, then the servers stop below.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
const code = await new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await servers.stop();
process.exit(code);
