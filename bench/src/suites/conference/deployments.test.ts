import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runChild } from '@stratus/testkit';
import { pollUntil } from './chaos-checks.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the conference deployments', () => {
  it('end with the process that started them, SIGTERMed (as a test runner ends a file out of time)', async () => {
    const starter = runChild(new URL('./fixtures/embedded-app.ts', import.meta.url), { lifetimeMs: 30_000 });
    const { pids } = await starter.nextMessage<{ pids: number[] }>(
      (message) => (message as { type?: string }).type === 'ready',
      30_000,
    );
    try {
      assert.equal(pids.length, 1);
      starter.kill('SIGTERM');
      await starter.exited;
      const gone = await pollUntil(
        async () => pids.every((pid) => !alive(pid)),
        performance.now() + 10_000,
        50,
      );
      assert.equal(gone, true, 'the app process is gone');
    } finally {
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
