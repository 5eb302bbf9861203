import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from './errors.js';
import { runInLanes } from './lanes.js';

/** A piece that records when it starts and ends, and finishes when `release` is called for it. */
function gate() {
  const log: string[] = [];
  const waiting = new Map<string, () => void>();
  const piece = (lane: string, name: string, fail = false) => ({
    lane,
    run: () =>
      new Promise<void>((resolve, reject) => {
        log.push(`start ${name}`);
        waiting.set(name, () => {
          log.push(`end ${name}`);
          if (fail) reject(new Error(name));
          else resolve();
        });
      }),
  });
  const release = async (name: string) => {
    for (let i = 0; i < 10 && !waiting.has(name); i++) await Promise.resolve();
    const done = waiting.get(name);
    assert.ok(done, `${name} is running`);
    waiting.delete(name);
    done();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { log, piece, release, running: () => [...waiting.keys()] };
}

describe('runInLanes', () => {
  it("runs each lane's pieces in order, one at a time, and different lanes at once", async () => {
    const { log, piece, release, running } = gate();
    const done = runInLanes([piece('a', 'a1'), piece('b', 'b1'), piece('a', 'a2'), piece('b', 'b2')], 8);
    await release('a1');
    assert.deepEqual(running(), ['b1', 'a2']);
    await release('b1');
    await release('a2');
    await release('b2');
    await done;
    assert.deepEqual(log, [
      'start a1',
      'start b1',
      'end a1',
      'start a2',
      'end b1',
      'start b2',
      'end a2',
      'end b2',
    ]);
  });

  it('runs no more than `concurrency` lanes at once, starting the next lane as one ends', async () => {
    const { piece, release, running } = gate();
    const done = runInLanes([piece('a', 'a1'), piece('b', 'b1'), piece('c', 'c1'), piece('a', 'a2')], 2);
    await release('b1');
    assert.deepEqual(running(), ['a1', 'c1']);
    await release('a1');
    assert.deepEqual(running(), ['c1', 'a2']);
    await release('c1');
    await release('a2');
    await done;
  });

  it('ends a failing lane there, lets the others finish, then rejects with the first failure', async () => {
    const { log, piece, release } = gate();
    const done = runInLanes(
      [piece('a', 'a1'), piece('b', 'b1', true), piece('a', 'a2', true), piece('b', 'b2'), piece('c', 'c1')],
      8,
    );
    const outcome = assert.rejects(done, /^Error: a2$/);
    await release('b1');
    await release('a1');
    await release('a2');
    await release('c1');
    await outcome;
    assert.ok(!log.includes('start b2'), 'the rest of a failed lane does not run');
    assert.ok(log.includes('end c1'), 'other lanes run to their end');
  });

  it('runs nothing and resolves for no work; refuses a concurrency below 1', async () => {
    await runInLanes([], 4);
    await assert.rejects(runInLanes([], 0), InvalidOptionsError);
  });
});
