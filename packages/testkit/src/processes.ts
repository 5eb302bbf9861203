/**
 * Child Node processes for multi-process tests (several instances sharing a lock, a crash mid-operation):
 * run a .ts file from sources, read its JSON-line messages, signal it (SIGKILL, SIGSTOP/SIGCONT, SIGTERM),
 * observe how it ended. Every wait is bounded, and children never outlive the test process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onProcessExit } from './exit-cleanup.js';

const DEFAULT_WAIT_MS = 5_000;
const DEFAULT_LIFETIME_MS = 60_000;
const MAX_KEPT_LINES = 10_000;
const MAX_KEPT_STDERR = 64 * 1024;

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunChildOptions {
  args?: readonly string[];
  /** Added to (and overriding) this process's environment; `undefined` removes a variable. */
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** Extra Node flags, before the file. */
  nodeArgs?: readonly string[];
  /** The child is SIGKILLed if still running after this long, so a test cannot hang on it. Default 60 s. */
  lifetimeMs?: number;
  /** Also copy the child's stderr to ours (it is always kept for error messages). Default false. */
  echoStderr?: boolean;
  /**
   * `'sources'` (default): through tsx, `@stratus/*` packages from their TypeScript sources. `'compiled'`: plain
   * Node, packages from their built `dist`, as an installed package runs (`file` is then compiled JavaScript).
   */
  from?: 'sources' | 'compiled';
}

export interface ChildHandle {
  readonly pid: number;
  /** Every stdout line so far (the last 10,000). */
  readonly lines: readonly string[];
  /** Every stdout line that parsed as JSON, in order. */
  readonly messages: readonly unknown[];
  /** The child's stderr so far (the last 64 KiB). */
  readonly stderr: string;
  /** How the child ended; never rejects. */
  readonly exited: Promise<ChildExit>;
  /** The exit once it happened, else undefined. */
  readonly exit: ChildExit | undefined;
  /**
   * The next JSON message (after those already returned) that satisfies `predicate`; messages skipped on
   * the way stay in `messages`. Rejects on timeout or when the child ends first, quoting its output.
   */
  nextMessage<T = unknown>(predicate?: (message: unknown) => boolean, timeoutMs?: number): Promise<T>;
  /** Like nextMessage, for raw stdout lines (its own cursor). */
  nextLine(predicate?: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Writes `message` to the child's stdin as one JSON line (a string is written as is, plus a newline). */
  send(message: unknown): void;
  /** Sends a signal (default SIGTERM); false when the child is already gone. */
  kill(signal?: NodeJS.Signals): boolean;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs` (default 2 s); resolves with the exit. */
  stop(graceMs?: number): Promise<ChildExit>;
}

function tsxLoader(): string {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return 'tsx';
  }
}

interface Cursor<T> {
  position: number;
  readonly items: T[];
  /** Index of the first kept item (older ones were dropped to bound memory). */
  dropped: number;
}

/**
 * Spawns `process.execPath --conditions=stratus-source --import tsx <file> ...args` (or, `from: 'compiled'`,
 * `process.execPath <file> ...args`), stdin/stdout/stderr piped. `file` is a path or a file: URL (e.g. `new URL('./fixtures/worker.ts', import.meta.url)`).
 */
export function runChild(file: string | URL, options: RunChildOptions = {}): ChildHandle {
  const path = file instanceof URL || file.startsWith('file:') ? fileURLToPath(file) : file;
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(options.from === 'compiled' ? [] : ['--conditions=stratus-source', '--import', tsxLoader()]),
      ...(options.nodeArgs ?? []),
      path,
      ...(options.args ?? []),
    ],
    { cwd: options.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error(`runChild: could not spawn ${process.execPath} for ${path}`);

  const unregister = onProcessExit(() => {
    child.kill('SIGKILL');
  });
  const lifetime = setTimeout(() => child.kill('SIGKILL'), options.lifetimeMs ?? DEFAULT_LIFETIME_MS);
  lifetime.unref();

  const lines: Cursor<string> = { position: 0, items: [], dropped: 0 };
  const messages: Cursor<unknown> = { position: 0, items: [], dropped: 0 };
  let stderr = '';
  let exit: ChildExit | undefined;
  const wakeups = new Set<() => void>();
  const wake = () => {
    for (const wakeup of [...wakeups]) wakeup();
  };

  const push = <T>(cursor: Cursor<T>, item: T) => {
    cursor.items.push(item);
    if (cursor.items.length > MAX_KEPT_LINES) {
      cursor.items.shift();
      cursor.dropped++;
    }
  };
  let partial = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      push(lines, line);
      const trimmed = line.trim();
      if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
        try {
          push(messages, JSON.parse(trimmed));
        } catch {
          // Not JSON after all: a plain line.
        }
      }
    }
    wake();
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-MAX_KEPT_STDERR);
    if (options.echoStderr) process.stderr.write(chunk);
  });
  // A child that exits (or is killed) while we write to its stdin must not crash us with EPIPE.
  child.stdin?.on('error', () => {});

  const exited = new Promise<ChildExit>((resolve) => {
    child.once('close', (code, signal) => {
      if (partial) push(lines, partial);
      exit = { code, signal };
      clearTimeout(lifetime);
      unregister();
      resolve(exit);
      wake();
    });
  });

  const describeEnd = () =>
    `stdout tail:\n${lines.items.slice(-10).join('\n')}\nstderr tail:\n${stderr.split('\n').slice(-15).join('\n')}`;

  function next<T>(
    cursor: Cursor<T>,
    what: string,
    predicate: ((item: T) => boolean) | undefined,
    timeoutMs: number,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        while (cursor.position < cursor.dropped + cursor.items.length) {
          const index = Math.max(cursor.position, cursor.dropped);
          cursor.position = index + 1;
          const item = cursor.items[index - cursor.dropped] as T;
          if (!predicate || predicate(item)) {
            done();
            resolve(item);
            return true;
          }
        }
        if (exit) {
          done();
          reject(
            new Error(
              `child ${pid} ended (code ${exit.code}, signal ${exit.signal}) before the awaited ${what}\n${describeEnd()}`,
            ),
          );
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for a ${what} from child ${pid}\n${describeEnd()}`,
          ),
        );
      }, timeoutMs);
      const wakeup = () => {
        check();
      };
      const done = () => {
        clearTimeout(timer);
        wakeups.delete(wakeup);
      };
      if (!check()) wakeups.add(wakeup);
    });
  }

  const handle: ChildHandle = {
    pid,
    get lines() {
      return lines.items;
    },
    get messages() {
      return messages.items;
    },
    get stderr() {
      return stderr;
    },
    exited,
    get exit() {
      return exit;
    },
    nextMessage<T = unknown>(predicate?: (message: unknown) => boolean, timeoutMs = DEFAULT_WAIT_MS) {
      return next(messages, 'message', predicate, timeoutMs) as Promise<T>;
    },
    nextLine(predicate, timeoutMs = DEFAULT_WAIT_MS) {
      return next(lines, 'line', predicate, timeoutMs);
    },
    send(message) {
      child.stdin?.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
    },
    kill(signal = 'SIGTERM') {
      return exit === undefined && child.kill(signal);
    },
    async stop(graceMs = 2_000) {
      if (exit) return exit;
      child.kill('SIGCONT'); // a stopped process cannot act on SIGTERM
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  return handle;
}
