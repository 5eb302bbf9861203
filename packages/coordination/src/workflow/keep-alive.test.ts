/** A started Scheduler, Supervisor or Agent keeps its process alive while idle, and lets it end once closed. */
import { describe, it } from 'node:test';
import { assertKeptAlive, runIdle } from '@stratus/testkit';

describe('workflow processes with nothing to do', () => {
  for (const role of ['scheduler', 'supervisor', 'agent'] as const) {
    it(`${role === 'agent' ? 'an' : 'a'} ${role} keeps its process alive until closed, then lets it end`, async () => {
      assertKeptAlive(
        await runIdle(new URL('./fixtures/idle-worker.ts', import.meta.url), { env: { ROLE: role } }),
      );
    });
  }
});
