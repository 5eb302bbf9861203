#!/usr/bin/env node
// The benchmark's peers (BullMQ, pg-boss, Emmett, cockatiel, ...) have an install of their own in bench/, so the
// root `npm ci` leaves them out. This installs it on first use, and again whenever bench/package-lock.json has
// changed since (a stamp beside the install records the lock it came from). The @stratus packages the bench
// measures resolve from the root node_modules, through the workspace links.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const bench = new URL('../bench/', import.meta.url).pathname;
const stamp = join(bench, 'node_modules', '.stratus-lock.sha256');

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Runs `npm ci` in bench/ unless its node_modules was installed from the current lock. */
export function installBench(): void {
  const lock = createHash('sha256')
    .update(readFileSync(join(bench, 'package-lock.json')))
    .digest('hex');
  if (readOrUndefined(stamp) === lock) return;
  console.error('Installing the benchmark peers (npm ci in bench/)...');
  const { status, error } = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: bench,
    stdio: 'inherit',
  });
  if (error !== undefined || status !== 0) {
    throw new Error(`npm ci in bench/ failed (${error?.message ?? `exit code ${status}`})`);
  }
  writeFileSync(stamp, lock);
}

if (import.meta.url === `file://${process.argv[1]}`) installBench();
