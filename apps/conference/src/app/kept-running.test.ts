import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { KeptRunning } from './kept-running.js';

/** A part that runs until stopped, or until the test fails it. */
class Part {
  stopped = false;
  readonly done: Promise<void>;
  fail!: (error: Error) => void;
  #end!: () => void;
  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.#end = resolve;
      this.fail = reject;
    });
  }
  async stop(): Promise<void> {
    this.stopped = true;
    this.#end();
  }
}

describe('KeptRunning', () => {
  test('starts a part that stopped on an error again a second later, and none once stopped', async () => {
    const clock = new VirtualClock();
    const parts: Part[] = [];
    const failures: unknown[] = [];
    const kept = new KeptRunning(
      () => {
        const part = new Part();
        parts.push(part);
        return { part, done: part.done };
      },
      { clock, onFailure: (error) => failures.push(error) },
    );
    assert.equal(kept.part, parts[0]);
    parts[0]?.fail(new Error('connect ECONNREFUSED'));
    await clock.advance(0);
    assert.equal(kept.part, undefined, 'down while it waits');
    assert.deepEqual(
      failures.map((error) => (error as Error).message),
      ['connect ECONNREFUSED'],
    );
    await clock.advance(999);
    assert.equal(parts.length, 1);
    await clock.advance(1);
    assert.equal(parts.length, 2, 'started again after a second');
    assert.equal(kept.part, parts[1]);

    parts[1]?.fail(new Error('again'));
    await clock.advance(0);
    await kept.stop();
    await clock.advance(5_000);
    assert.equal(parts.length, 2, 'a restart due is called off by stop()');
  });

  test('stops the part running, which then counts as no failure', async () => {
    const clock = new VirtualClock();
    const failures: unknown[] = [];
    const part = new Part();
    const kept = new KeptRunning(() => ({ part, done: part.done }), {
      clock,
      onFailure: (error) => failures.push(error),
    });
    await kept.stop();
    part.fail(new Error('late'));
    await clock.advance(5_000);
    assert.equal(part.stopped, true);
    assert.deepEqual(failures, []);
  });

  test('a part that cannot even start is tried again', async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const part = new Part();
    const kept = new KeptRunning(
      () => {
        attempts++;
        if (attempts === 1) throw new Error('no connection');
        return { part, done: part.done };
      },
      { clock, onFailure: () => {} },
    );
    assert.equal(kept.part, undefined);
    await clock.advance(1_000);
    assert.equal(kept.part, part);
    await kept.stop();
  });
});
