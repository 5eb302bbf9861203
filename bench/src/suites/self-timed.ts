/** Helpers shared by the self-timed suites (messaging, eventstore). */
import { execFileSync } from 'node:child_process';

/** The commit the run measured, and whether the packages' sources differed from it (several people edit them). */
export function sourceVersion(): Record<string, unknown> {
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: import.meta.dirname,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  try {
    const changed = git('status', '--porcelain', '--', '../../../packages').split('\n').filter(Boolean);
    return { commit: git('rev-parse', '--short', 'HEAD'), uncommittedPackageFiles: changed.length };
  } catch {
    return { commit: 'unknown (no git)' };
  }
}

/** The first line of an error's message, for a skipped or failed row. */
export const describeError = (error: unknown) =>
  error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
