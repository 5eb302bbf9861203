// Worker threads from TypeScript sources: startWorkerThread starts a thread on an ES module, also when it is a .ts
// file run through tsx (Node 20 does not hand a thread the parent's --import hooks; it registers tsx itself).
// Prints:
//   the worker doubled 21: 42
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startWorkerThread } from '@stratus/core';

if (isMainThread) {
  // This very file, run a second time as the worker.
  const worker = startWorkerThread(new URL(import.meta.url), { workerData: 21 });
  worker.once('message', (answer: number) => {
    console.log(`the worker doubled 21: ${answer}`);
    void worker.terminate();
  });
} else {
  parentPort?.postMessage((workerData as number) * 2);
}
