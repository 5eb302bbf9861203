/** A started Subscription or ProjectionRunner keeps its process alive while caught up, and lets it end once stopped. */
import { describe, it } from 'node:test';
import { assertKeptAlive, runIdle } from '@stratus/testkit';

describe('event readers with nothing to read', () => {
  for (const role of ['subscription', 'runner'] as const) {
    it(`a ${role} on SQLite keeps its process alive until stopped, then lets it end`, async () => {
      assertKeptAlive(
        await runIdle(new URL('./fixtures/idle-reader.ts', import.meta.url), { env: { ROLE: role } }),
      );
    });
  }
});
