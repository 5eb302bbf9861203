/**
 * Synchronous clean-up run when this process ends, however it ends short of SIGKILL: normal exit,
 * process.exit(), or SIGINT/SIGTERM/SIGHUP. Servers and child processes the test kit starts register here so
 * an interrupted test run leaves nothing behind.
 */
type Cleanup = () => void;

const cleanups = new Set<Cleanup>();
const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

function runAll(): void {
  for (const cleanup of [...cleanups]) {
    cleanups.delete(cleanup);
    try {
      cleanup();
    } catch {
      // Best effort: one failing clean-up must not stop the others.
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  // Someone else handles this signal (an app's graceful shutdown): leave it to them; 'exit' cleans up later.
  if (process.listenerCount(signal) > 1) return;
  runAll();
  for (const s of signals) process.removeListener(s, onSignal);
  // Die by the same signal, as the process would have without our handler.
  process.kill(process.pid, signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runAll);
  for (const signal of signals) process.on(signal, onSignal);
}

/** Registers `cleanup` to run once at process end; the returned function unregisters it. */
export function onProcessExit(cleanup: Cleanup): () => void {
  install();
  cleanups.add(cleanup);
  return () => {
    cleanups.delete(cleanup);
  };
}
