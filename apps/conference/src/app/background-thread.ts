/**
 * The background parts of the embedded default, run in a worker thread by startSystem (threaded-system.ts): the
 * command consumers, the process manager and reactions, the read-model runners. It tells the main thread when it is
 * ready, each view change once committed, its readiness when that changes and its stats when asked.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { startConferenceSystem } from './system.js';
import type { BackgroundData, FromBackground, ToBackground } from './threaded-system.js';

const port = parentPort;
if (port === null) throw new Error('background-thread.ts runs as a worker thread (see startSystem)');
const tell = (message: FromBackground) => port.postMessage(message);

const { config, threadLock } = workerData as BackgroundData;
const system = await startConferenceSystem(
  { ...config, role: 'worker' },
  {
    onViewChange: (keys) => tell({ type: 'changed', keys }),
    sqliteThreadLock: threadLock,
    // The main thread has the logger.
    log: {
      error: (details, message) => tell({ type: 'log', level: 'error', details, message }),
      info: (details, message) => tell({ type: 'log', level: 'info', details, message }),
    },
  },
);
let ready = system.ready();
tell({ type: 'ready', ready });
// Readiness is read synchronously on the main thread: tell it each change.
const health = setInterval(() => {
  if (system.ready() === ready) return;
  ready = system.ready();
  tell({ type: 'ready', ready });
}, 500);

port.on('message', (message: ToBackground) => {
  if (message.type === 'stats') {
    void system.backgroundStats().then((stats) => tell({ type: 'stats', id: message.id, stats }));
  } else {
    clearInterval(health);
    // In a worker thread, exit ends the thread only.
    void system.stop().then(() => process.exit(0));
  }
});
