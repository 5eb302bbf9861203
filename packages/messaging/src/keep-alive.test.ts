/** A started Consumer or OutboxRelay keeps its process alive while idle, and lets it end once closed. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runIdle } from '@stratus/testkit';

const directory = mkdtempSync(join(tmpdir(), 'stratus-keep-alive-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

describe('messaging parts with nothing to do', () => {
  for (const role of ['consumer', 'relay'] as const) {
    it(`a ${role} on SQLite keeps its process alive until closed, then lets it end`, async () => {
      const run = await runIdle(new URL('./fixtures/idle-part.ts', import.meta.url), {
        env: { ROLE: role, DIR: directory },
      });
      assert.deepEqual(run.events, ['ready', 'closed'], run.stderr);
      assert.deepEqual(run.exit, { code: 0, signal: null });
    });
  }
});
