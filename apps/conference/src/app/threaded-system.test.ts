import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { BackgroundThread, type ThreadLog } from './threaded-system.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-threads-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
const DYING = new URL('./fixtures/dying-background.ts', import.meta.url);

/** A log that keeps its entries and says when one with `message` arrives. */
function recordingLog() {
  const entries: { level: string; details: object; message: string }[] = [];
  const waiting = new Map<string, () => void>();
  const log: ThreadLog = {
    error: (details, message) => add('error', details, message),
    info: (details, message) => add('info', details, message),
  };
  function add(level: string, details: object, message: string) {
    entries.push({ level, details, message });
    waiting.get(message)?.();
  }
  const heard = (message: string) =>
    new Promise<void>((resolve) => {
      if (entries.some((entry) => entry.message === message)) resolve();
      else waiting.set(message, resolve);
    });
  return { log, entries, heard };
}

describe('BackgroundThread', () => {
  test('a thread that dies is reported, unready, started again a second later, and stopped for good', async () => {
    const counter = join(directory, 'runs');
    writeFileSync(counter, '0');
    const { log, entries, heard } = recordingLog();
    const thread = new BackgroundThread(DYING, { counter }, log);
    await thread.start();
    assert.equal(thread.ready, true);
    const back = heard('the background thread is running again');
    // The first run dies when asked: the question is answered with no stats rather than left hanging.
    assert.deepEqual(await thread.stats(), { viewLag: [], processOutcomes: [], failingHandlers: [] });
    assert.equal(thread.ready, false);
    await back;
    assert.equal(thread.ready, true);
    assert.deepEqual((await thread.stats()).processOutcomes, [['runs', 2]]);
    const died = entries.find((entry) => entry.level === 'error');
    assert.equal(died?.message, 'the background thread died; starting it again');
    assert.equal((died?.details as { code?: number } | undefined)?.code, 3);
    await thread.stop();
    assert.equal(thread.ready, false);
    assert.deepEqual(
      await thread.stats(),
      { viewLag: [], processOutcomes: [], failingHandlers: [] },
      'a stopped thread answers nothing',
    );
  });

  test('a thread that fails before it is ready fails the start', async () => {
    const thread = new BackgroundThread(DYING, { counter: '', failEarly: true }, undefined);
    await assert.rejects(thread.start(), /cannot start/);
    assert.equal(thread.ready, false);
  });
});
