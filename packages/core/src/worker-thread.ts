import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread on an ES module. Run from TypeScript sources through tsx, the module's URL ends in .ts:
 * Node 22 and later give the thread the parent's `--import` hooks, Node 20 does not, so there the thread registers
 * tsx itself before it imports the module. Other options (workerData, execArgv, resourceLimits) pass through.
 */
export function startWorkerThread(module: URL, options: WorkerOptions = {}): Worker {
  if (!module.pathname.endsWith('.ts')) return new Worker(module, options);
  const boot = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};
register();
await import(${JSON.stringify(module.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), options);
}
