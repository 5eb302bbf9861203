import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { constantBackoff } from '@stratus/core';
import { retry } from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';
import { openEventLog } from './event-log.js';

describe('event log', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 10 }))));

  it('writes each policy event as one JSON line with its fields', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stratus-log-'));
    dirs.push(dir);
    const path = join(dir, 'events.jsonl');
    const log = await openEventLog(path);
    const clock = new VirtualClock();
    const policy = retry({
      name: 'upstream',
      maxAttempts: 2,
      backoff: constantBackoff(10),
      clock,
    });
    let calls = 0;
    const done = policy.execute(() => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      return 'ok';
    });
    await clock.advance(10);
    assert.equal(await done, 'ok');
    await log.close();
    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const retried = lines.find((line) => line.stratus?.type === 'retry');
    assert.ok(retried, `no retry line in ${JSON.stringify(lines)}`);
    assert.equal(retried.stratus.component, 'retry');
    assert.equal(retried.stratus.name, 'upstream');
    assert.equal(retried.stratus.delayMs, 10);
    assert.equal(retried.service, 'stratus-demo');
  });
});
