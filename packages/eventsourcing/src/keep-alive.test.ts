/** A started Subscription or ProjectionRunner keeps its process alive while caught up, and lets it end once stopped. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runIdle } from '@stratus/testkit';

const directory = mkdtempSync(join(tmpdir(), 'stratus-keep-alive-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

describe('event readers with nothing to read', () => {
  for (const role of ['subscription', 'runner'] as const) {
    it(`a ${role} on SQLite keeps its process alive until stopped, then lets it end`, async () => {
      const run = await runIdle(new URL('./fixtures/idle-reader.ts', import.meta.url), {
        env: { ROLE: role, DIR: directory },
      });
      assert.deepEqual(run.events, ['ready', 'closed'], run.stderr);
      assert.deepEqual(run.exit, { code: 0, signal: null });
    });
  }
});
