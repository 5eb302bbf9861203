import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { systemClock } from '@stratus/core';
import { conferenceView } from '../read-models/conference-view.js';
import { configFromEnv } from './config.js';
import { openInfrastructure, type ViewChange } from './infrastructure.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-infrastructure-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

describe('openInfrastructure (embedded)', () => {
  test("a view runner reports its view's activation as a change of every document", async () => {
    const infrastructure = await openInfrastructure(
      configFromEnv({ STRATUS_DATA_DIR: directory }),
      systemClock,
    );
    const changes: ViewChange[] = [];
    const runner = infrastructure.runner(conferenceView, (keys) => changes.push(keys));
    const reader = infrastructure.reader(conferenceView);
    // Read while no version serves: nothing, and nothing that says so apart from the activation.
    assert.equal(await reader.get('conference', 'any'), undefined);
    const running = runner.start();
    await runner.caughtUp;
    await runner.stop();
    await running;
    assert.deepEqual(changes, ['all'], 'documents read before the view served may be stale');
    await infrastructure.close();
  });
});
