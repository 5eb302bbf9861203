/**
 * At-least-once delivery plus the inbox gives exactly-once effects, whatever kills the consumers: 10,000 messages
 * through a durable backend while worker processes are SIGKILLed at random (and replaced). One file per backend, so
 * each runs within the test runner's per-file time limit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crashAndCheck } from './harness.js';

describe('crash test on SQLite: SIGKILLed consumers, exactly-once effects', () => {
  it('takes effect exactly once for each of 10,000 messages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stratus-crash-sqlite-'));
    try {
      await crashAndCheck('sqlite', `sqlite:${join(dir, 'queue.db')}`, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    }
  });
});
