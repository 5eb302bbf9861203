import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { startWorkerThread } from './worker-thread.js';

describe('startWorkerThread', () => {
  it('runs a TypeScript module from sources in a thread, with its workerData', async () => {
    const thread = startWorkerThread(new URL('./fixtures/echo-thread.ts', import.meta.url), {
      workerData: 21,
    });
    const [message] = (await once(thread, 'message')) as [{ doubled: number }];
    assert.deepEqual(message, { doubled: 42 });
    const [code] = (await once(thread, 'exit')) as [number];
    assert.equal(code, 0);
  });

  it('reports a module that cannot load as an error event', async () => {
    const thread = startWorkerThread(new URL('./fixtures/no-such-thread.ts', import.meta.url));
    const [error] = (await once(thread, 'error')) as [Error];
    assert.match(String(error), /no-such-thread/);
  });
});
