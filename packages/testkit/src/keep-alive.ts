/**
 * Whether a long-running part (a consumer, a subscription, a scheduler) keeps its process alive while it has nothing
 * to do, as a listening server does, and lets it end once closed. The part runs alone in a child process
 * (`closeWhenIdle` on the child's side); `runIdle` reads what happened.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildExit, runChild } from './processes.js';

/** How long the child leaves its part idle before closing it. */
const IDLE_MS = 300;

/**
 * In the child, once the part is started: reports `ready`, then closes it from a timer that does not keep the
 * process alive itself, and reports `closed`. `closed` is seen only if the part kept the process alive until then.
 */
export function closeWhenIdle(close: () => Promise<void> | void): void {
  console.log(JSON.stringify({ event: 'ready' }));
  setTimeout(async () => {
    await close();
    console.log(JSON.stringify({ event: 'closed' }));
  }, IDLE_MS).unref();
}

export interface IdleRun {
  /** ['ready', 'closed'] when the part kept its process alive while idle. */
  readonly events: readonly string[];
  /** { code: 0, signal: null } when the process ended by itself once the part closed. */
  readonly exit: ChildExit;
  readonly stderr: string;
}

/**
 * Runs `file` (which starts a part and calls closeWhenIdle) to its end, within `lifetimeMs`. The child gets a
 * directory of its own for its files in `DIR`, removed once it has ended.
 */
export async function runIdle(
  file: string | URL,
  options: { env?: Readonly<Record<string, string | undefined>>; lifetimeMs?: number } = {},
): Promise<IdleRun> {
  const directory = mkdtempSync(join(tmpdir(), 'stratus-idle-'));
  try {
    const child = runChild(file, {
      env: { DIR: directory, ...options.env },
      lifetimeMs: options.lifetimeMs ?? 30_000,
    });
    const exit = await child.exited;
    return {
      events: child.messages.map((message) => String((message as { event?: unknown }).event)),
      exit,
      stderr: child.stderr,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
  }
}

/** Asserts that the part of `run` kept its process alive while idle, and let it end once closed. */
export function assertKeptAlive(run: IdleRun): void {
  assert.deepEqual(run.events, ['ready', 'closed'], run.stderr);
  assert.deepEqual(run.exit, { code: 0, signal: null });
}
