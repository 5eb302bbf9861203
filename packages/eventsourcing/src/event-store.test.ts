import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { EventStore } from './event-store.js';
import { MemoryEventStoreBackend } from './memory/memory-event-store.js';

describe('EventStore', () => {
  it('refuses a bad read of all events by the option at fault', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    await store.appendToStream('a-1', [{ type: 'A', data: 1 }]);
    const bad: [string, Record<string, unknown>][] = [
      ['after', { after: -1 }],
      ['after', { after: 1.5 }],
      ['maxCount', { maxCount: 0 }],
      ['following', { following: 'yes' }],
    ];
    for (const [option, query] of bad) {
      await assert.rejects(
        store.readAll(query),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        JSON.stringify(query),
      );
    }
    assert.deepEqual(
      (await store.readAll({ following: true })).map((event) => event.type),
      ['A'],
    );
  });
});
