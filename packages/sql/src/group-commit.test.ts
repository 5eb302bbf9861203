import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit, KeyedGroupCommit } from './group-commit.js';

describe('GroupCommit', () => {
  it('sends what arrives while a batch is in flight together in the next batch', async () => {
    const batches: number[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const commit = new GroupCommit<number, number>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await gate;
      return items.map((n) => n * 10);
    });
    const first = commit.submit(1);
    await Promise.resolve();
    await Promise.resolve();
    const rest = [commit.submit(2), commit.submit(3), commit.submit(4)];
    release();
    assert.deepEqual(await Promise.all([first, ...rest]), [10, 20, 30, 40]);
    assert.deepEqual(batches, [[1], [2, 3, 4]]);
  });

  it('caps the batch size', async () => {
    const sizes: number[] = [];
    const commit = new GroupCommit<number, number>(async (items) => {
      sizes.push(items.length);
      return items;
    }, 2);
    await Promise.all([1, 2, 3, 4, 5].map((n) => commit.submit(n)));
    assert.deepEqual(sizes, [2, 2, 1]);
  });

  it('rejects every caller of a failed batch and carries on with the next', async () => {
    let calls = 0;
    const commit = new GroupCommit<number, number>(async (items) => {
      calls++;
      if (calls === 1) throw new Error('connection lost');
      return items;
    });
    const failed = await Promise.allSettled([commit.submit(1), commit.submit(2)]);
    assert.deepEqual(
      failed.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(await commit.submit(3), 3);
  });
});

describe('GroupCommit, immediate', () => {
  it('sends a lone item at once and groups those that come while it is in flight', async () => {
    const batches: number[][] = [];
    let idle = 0;
    const commit = new GroupCommit<number, number>(
      async (items) => {
        batches.push(items);
        return items;
      },
      1000,
      { immediate: true, onIdle: () => idle++ },
    );
    const first = commit.submit(1);
    assert.deepEqual(batches, [[1]], 'flushed before submit returned');
    const rest = [commit.submit(2), commit.submit(3)];
    assert.deepEqual(await Promise.all([first, ...rest]), [1, 2, 3]);
    assert.deepEqual(batches, [[1], [2, 3]]);
    assert.equal(idle, 1, 'idle once both batches are answered');
  });
});

describe('KeyedGroupCommit', () => {
  it('groups calls by key, and forgets a key once its callers are answered', async () => {
    const batches: string[] = [];
    const commit = new KeyedGroupCommit<number, string>(async (key, items) => {
      batches.push(`${key}:${items.join(',')}`);
      return items.map((n) => `${key}${n}`);
    });
    const answers = Promise.all([commit.submit('a', 1), commit.submit('b', 2), commit.submit('a', 3)]);
    assert.equal(commit.keys, 2);
    assert.deepEqual(await answers, ['a1', 'b2', 'a3']);
    assert.deepEqual(batches.sort(), ['a:1,3', 'b:2']);
    assert.equal(commit.keys, 0);
  });
});
