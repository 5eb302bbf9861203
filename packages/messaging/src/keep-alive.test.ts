/** A started Consumer or OutboxRelay keeps its process alive while idle, and lets it end once closed. */
import { describe, it } from 'node:test';
import { assertKeptAlive, runIdle } from '@stratus/testkit';

describe('messaging parts with nothing to do', () => {
  for (const role of ['consumer', 'relay'] as const) {
    it(`a ${role} on SQLite keeps its process alive until closed, then lets it end`, async () => {
      assertKeptAlive(
        await runIdle(new URL('./fixtures/idle-part.ts', import.meta.url), { env: { ROLE: role } }),
      );
    });
  }
});
