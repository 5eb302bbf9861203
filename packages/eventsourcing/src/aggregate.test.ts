import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import fc from 'fast-check';
import { type AggregateEvent, AggregateRepository, type Decider } from './aggregate.js';
import { DuplicateEventIdError, WrongExpectedVersionError } from './errors.js';
import { EventStore } from './event-store.js';
import { MemoryEventStoreBackend } from './memory/memory-event-store.js';

type AccountEvent =
  | { type: 'Opened'; data: { owner: string } }
  | { type: 'Deposited'; data: { amount: number } }
  | { type: 'Withdrawn'; data: { amount: number } };
interface Account {
  readonly open: boolean;
  readonly owner: string;
  readonly balance: number;
  readonly movements: number;
}
type AccountCommand = { kind: 'deposit'; amount: number } | { kind: 'withdraw'; amount: number };

const account: Decider<Account, AccountEvent, AccountCommand> = {
  initialState: () => ({ open: false, owner: '', balance: 0, movements: 0 }),
  evolve(state, event) {
    switch (event.type) {
      case 'Opened':
        return { ...state, open: true, owner: event.data.owner };
      case 'Deposited':
        return { ...state, balance: state.balance + event.data.amount, movements: state.movements + 1 };
      case 'Withdrawn':
        return { ...state, balance: state.balance - event.data.amount, movements: state.movements + 1 };
    }
  },
  decide(command, state) {
    if (command.kind === 'withdraw' && command.amount > state.balance) throw new Error('insufficient funds');
    return command.kind === 'deposit'
      ? { type: 'Deposited', data: { amount: command.amount } }
      : { type: 'Withdrawn', data: { amount: command.amount } };
  },
};

/** Counts the stream reads it serves (the cache tests check when the store is not asked). */
class CountingStore extends MemoryEventStoreBackend {
  reads = 0;
  /** The first version each read asked for. */
  readonly readsFrom: number[] = [];
  override async readStream(...args: Parameters<MemoryEventStoreBackend['readStream']>) {
    this.reads++;
    this.readsFrom.push(args[1]?.from ?? 1);
    return super.readStream(...args);
  }
  /** What each append asked of the store's commit. */
  readonly immediate: (boolean | undefined)[] = [];
  override async append(...args: Parameters<MemoryEventStoreBackend['append']>) {
    this.immediate.push(args[0].immediate);
    return super.append(...args);
  }
}

function setup(options: Partial<ConstructorParameters<typeof AggregateRepository>[1]> = {}) {
  const clock = new VirtualClock({ now: 1_750_000_000_000 });
  const backend = new CountingStore();
  const store = new EventStore({ backend, clock });
  const repository = new AggregateRepository(store, {
    category: 'account',
    decider: account,
    ...options,
  } as never) as AggregateRepository<Account, AccountEvent, AccountCommand>;
  return { clock, store, repository, backend, reads: () => backend.reads, readsFrom: backend.readsFrom };
}

describe('AggregateRepository', () => {
  it('decides, appends with the loaded version and returns the new state', async () => {
    const { repository, store } = setup();
    const opened = await repository.handle('1', () => ({ type: 'Opened', data: { owner: 'ann' } }));
    assert.equal(opened.version, 1);
    await repository.execute('1', { kind: 'deposit', amount: 50 });
    const after = await repository.execute('1', { kind: 'withdraw', amount: 20 }, { correlationId: 'cmd-9' });
    assert.deepEqual(after.state, { open: true, owner: 'ann', balance: 30, movements: 2 });
    assert.equal(after.version, 3);
    assert.deepEqual(await repository.load('1'), { state: after.state, version: 3 });
    const [last] = await store.readStream('account-1', { direction: 'backwards', maxCount: 1 });
    assert.equal(last?.metadata.correlationId, 'cmd-9');
    await assert.rejects(repository.execute('1', { kind: 'withdraw', amount: 100 }), /insufficient funds/);
    assert.equal(await store.streamVersion('account-1'), 3);
  });

  it('reloads and decides again when another writer got there first', async () => {
    const { store } = setup();
    const a = new AggregateRepository(store, { category: 'account', decider: account, maxAttempts: 20 });
    const b = new AggregateRepository(store, { category: 'account', decider: account, maxAttempts: 20 });
    const conflicts: AggregateEvent[] = [];
    a.events.on((event) => conflicts.push(event));
    b.events.on((event) => conflicts.push(event));
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).execute('shared', { kind: 'deposit', amount: 1 }),
      ),
    );
    assert.deepEqual(await a.load('shared'), {
      state: { open: false, owner: '', balance: 10, movements: 10 },
      version: 10,
    });
    assert.ok(conflicts.length > 0 && conflicts.every((event) => event.type === 'conflict'));
  });

  it('refuses to decide against a stale expected version, without retrying', async () => {
    const { repository } = setup();
    await repository.execute('2', { kind: 'deposit', amount: 5 });
    await assert.rejects(
      repository.execute('2', { kind: 'deposit', amount: 5 }, { expectedVersion: 0 }),
      (error: unknown) => error instanceof WrongExpectedVersionError && error.actual === 1,
    );
  });

  it('appends a repeated command with the same event ids once', async () => {
    const { repository, store } = setup();
    const first = await repository.execute('3', { kind: 'deposit', amount: 7 }, { eventIds: ['cmd-1/0'] });
    const again = await repository.execute('3', { kind: 'deposit', amount: 7 }, { eventIds: ['cmd-1/0'] });
    assert.equal(first.appended?.written, true);
    assert.equal(again.appended?.written, false);
    assert.equal(again.state.balance, 7);
    assert.equal(await store.streamVersion('account-3'), 1);
  });

  it('asks a function for the ids of the events decided only', async () => {
    const { repository, store } = setup();
    const asked: number[] = [];
    const eventIds = (index: number) => {
      asked.push(index);
      return `cmd-2/${index}`;
    };
    await repository.execute('5', { kind: 'deposit', amount: 1 }, { eventIds });
    assert.deepEqual(asked, [0]);
    const [event] = await store.readStream('account-5');
    assert.equal(event?.id, 'cmd-2/0');
  });

  describe('handleBatch', () => {
    const deposit = (amount: number, commandId: string) => ({
      decide: (state: Account) => account.decide?.({ kind: 'deposit', amount }, state) ?? [],
      options: { correlationId: commandId, eventIds: [`${commandId}/0`] },
    });
    const withdraw = (amount: number, commandId: string) => ({
      decide: (state: Account) => account.decide?.({ kind: 'withdraw', amount }, state) ?? [],
      options: { correlationId: commandId, eventIds: [`${commandId}/0`] },
    });

    it('decides each on the state the ones before left, and appends them all in one append', async () => {
      const { repository, store, backend } = setup({ immediateAppends: true });
      await repository.execute('b1', { kind: 'deposit', amount: 1 });
      const appendsBefore = backend.immediate.length;
      const handled = await repository.handleBatch('b1', [
        deposit(5, 'c1'),
        withdraw(6, 'c2'),
        deposit(2, 'c3'),
      ]);
      assert.deepEqual([handled.decided, handled.version, handled.state.balance], [3, 4, 2]);
      assert.deepEqual(backend.immediate.slice(appendsBefore), [true], 'one append, committed at once');
      const events = (await store.readStream('account-b1')).slice(1);
      assert.deepEqual(
        events.map((event) => [event.id, event.metadata.correlationId]),
        [
          ['c1/0', 'c1'],
          ['c2/0', 'c2'],
          ['c3/0', 'c3'],
        ],
      );
      assert.deepEqual(await repository.load('b1'), { state: handled.state, version: 4 });
    });

    it('stops before the first decision that throws, and throws when that is the first', async () => {
      const { repository, store } = setup();
      const handled = await repository.handleBatch('b2', [
        deposit(2, 'c1'),
        withdraw(10, 'c2'),
        deposit(1, 'c3'),
      ]);
      assert.deepEqual([handled.decided, handled.state.balance], [1, 2]);
      assert.equal(await store.streamVersion('account-b2'), 1);
      await assert.rejects(
        repository.handleBatch('b2', [withdraw(10, 'c2'), deposit(1, 'c3')]),
        /insufficient/,
      );
      assert.equal(await store.streamVersion('account-b2'), 1);
    });

    it('appends nothing when a command of the batch was handled before', async () => {
      const { repository, store } = setup();
      await repository.execute('b3', { kind: 'deposit', amount: 4 }, { eventIds: ['c1/0'] });
      await assert.rejects(
        repository.handleBatch('b3', [deposit(4, 'c1'), deposit(1, 'c2')]),
        DuplicateEventIdError,
      );
      assert.equal(await store.streamVersion('account-b3'), 1);
    });

    it('reloads and decides the batch again when another writer got there first', async () => {
      const { store } = setup();
      const a = new AggregateRepository(store, { category: 'account', decider: account, maxAttempts: 20 });
      const b = new AggregateRepository(store, { category: 'account', decider: account, maxAttempts: 20 });
      const conflicts: AggregateEvent[] = [];
      a.events.on((event) => conflicts.push(event));
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          i % 2 === 0
            ? a.handleBatch('b4', [deposit(1, `a${i}`), deposit(1, `a${i}b`)])
            : b.execute('b4', { kind: 'deposit', amount: 1 }),
        ),
      );
      assert.equal((await a.load('b4')).state.balance, 9);
      assert.ok(conflicts.length > 0 && conflicts.every((event) => event.type === 'conflict'));
    });

    it('refuses an empty batch', async () => {
      const { repository } = setup();
      await assert.rejects(repository.handleBatch('b5', []), InvalidOptionsError);
    });
  });

  describe('assumeNew', () => {
    it('decides a new stream without reading it', async () => {
      const { repository, backend, store } = setup();
      const handled = await repository.execute('6', { kind: 'deposit', amount: 4 }, { assumeNew: true });
      assert.equal(backend.reads, 0);
      assert.equal(handled.version, 1);
      assert.equal(await store.streamVersion('account-6'), 1);
    });

    it('decides again on a real load when the stream exists, without using up an attempt', async () => {
      const { repository, backend, store } = setup({ maxAttempts: 1 });
      await repository.execute('7', { kind: 'deposit', amount: 10 });
      const fresh = new AggregateRepository(store, { category: 'account', decider: account, maxAttempts: 1 });
      const handled = await fresh.execute('7', { kind: 'withdraw', amount: 3 }, { assumeNew: true });
      assert.equal(handled.state.balance, 7, 'decided on the stored balance, not against an empty account');
      assert.equal(await store.streamVersion('account-7'), 2);
      assert.ok(backend.reads > 0);
    });

    it('falls back to a real load when the initial state refuses the command', async () => {
      const { repository, store } = setup();
      await repository.execute('8', { kind: 'deposit', amount: 10 });
      const fresh = new AggregateRepository(store, { category: 'account', decider: account });
      // Against an empty account a withdrawal throws; the stored balance allows it.
      const handled = await fresh.execute('8', { kind: 'withdraw', amount: 6 }, { assumeNew: true });
      assert.equal(handled.state.balance, 4);
    });

    it('uses a cached state rather than guess', async () => {
      const { repository, backend } = setup({ cache: {} });
      await repository.execute('9', { kind: 'deposit', amount: 2 });
      const handled = await repository.execute('9', { kind: 'deposit', amount: 3 }, { assumeNew: true });
      assert.equal(handled.state.balance, 5);
      assert.equal(handled.version, 2);
      assert.equal(backend.reads, 1, 'only the first command read the (empty) stream');
    });
  });

  it('takes snapshots every N events and loads from them', async () => {
    const { repository, store } = setup({ snapshots: { every: 3 } });
    for (let i = 1; i <= 7; i++) await repository.execute('4', { kind: 'deposit', amount: i });
    const snapshot = await store.backend.loadSnapshot('account-4');
    assert.equal(snapshot?.version, 6);
    assert.deepEqual(JSON.parse(snapshot?.state ?? 'null'), {
      open: false,
      owner: '',
      balance: 21,
      movements: 6,
    });
    const fresh = new AggregateRepository(store, {
      category: 'account',
      decider: account,
      snapshots: { every: 3 },
    });
    assert.deepEqual(await fresh.load('4'), {
      state: { open: false, owner: '', balance: 28, movements: 7 },
      version: 7,
    });
    // A snapshot of another shape is ignored: the stream is replayed.
    await store.backend.storeSnapshot({
      ...(snapshot as NonNullable<typeof snapshot>),
      state: '{"broken":true}',
      schemaVersion: 9,
    });
    const replayed = await fresh.load('4');
    assert.equal(replayed.state.balance, 28);
  });

  it('equals a full replay when loaded from a snapshot (property)', async () => {
    const operation = fc.oneof(
      fc.record({ kind: fc.constant('deposit' as const), amount: fc.integer({ min: 1, max: 100 }) }),
      fc.record({ kind: fc.constant('withdraw' as const), amount: fc.integer({ min: 1, max: 100 }) }),
      fc.constant({ kind: 'snapshot' as const }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { maxLength: 40 }),
        fc.integer({ min: 1, max: 7 }),
        async (operations, every) => {
          const { store } = setup();
          const repository = new AggregateRepository(store, {
            category: 'account',
            decider: account,
            snapshots: { every },
          });
          for (const op of operations) {
            if (op.kind === 'snapshot') await repository.snapshot('p');
            else await repository.execute('p', op).catch(() => undefined);
          }
          const fromSnapshot = await new AggregateRepository(store, {
            category: 'account',
            decider: account,
            snapshots: {},
          }).load('p');
          const replay = await store.aggregateStream('account-p', {
            initialState: account.initialState,
            evolve: (state: Account, event) => account.evolve(state, event as unknown as AccountEvent),
          });
          assert.deepEqual(fromSnapshot, replay);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('serves recent states from its cache: trusted for a second, then topped up from the stream', async () => {
    const { repository, reads, clock, store } = setup({ cache: { trustMs: 1000, ttlMs: 60_000 } });
    await repository.execute('5', { kind: 'deposit', amount: 10 });
    const before = reads();
    assert.equal((await repository.load('5')).state.balance, 10);
    assert.equal(reads(), before, 'a state saved under a second ago is used as is');
    // Another writer appends behind the cache's back.
    await store.appendToStream('account-5', [{ type: 'Deposited', data: { amount: 5 } }]);
    await clock.advance(1500);
    assert.equal((await repository.load('5')).state.balance, 15, 'an older entry reads the events after it');
    assert.equal(reads(), before + 1);
    await clock.advance(60_000);
    assert.equal((await repository.load('5')).state.balance, 15);
  });

  it('recovers from a stale trusted cache entry through the conflict retry', async () => {
    const { repository, store, readsFrom } = setup({ cache: { trustMs: 1000 } });
    await repository.execute('6', { kind: 'deposit', amount: 10 });
    await store.appendToStream('account-6', [{ type: 'Withdrawn', data: { amount: 4 } }]);
    const after = await repository.execute('6', { kind: 'withdraw', amount: 6 });
    assert.equal(after.state.balance, 0);
    assert.equal(after.version, 3);
    assert.deepEqual(readsFrom.slice(-1), [2], 'the retry reads only the events after the cached state');
  });

  it('checks a refusal decided on a trusted cache entry against the stream before throwing it', async () => {
    const { repository, store, reads, readsFrom } = setup({ cache: { trustMs: 1000 } });
    await repository.execute('7', { kind: 'deposit', amount: 10 });
    // Another process deposits behind the cache's back: the cached balance (10) would refuse this withdrawal.
    await store.appendToStream('account-7', [{ type: 'Deposited', data: { amount: 5 } }]);
    const before = reads();
    const after = await repository.execute('7', { kind: 'withdraw', amount: 12 });
    assert.equal(after.state.balance, 3);
    assert.equal(reads(), before + 1, 'one read of the stream, for the refusal');
    assert.equal(readsFrom.at(-1), 2, 'the read starts after the cached state (version 1)');
    // A refusal that holds on the stream too is thrown, after that one read.
    await assert.rejects(repository.execute('7', { kind: 'withdraw', amount: 100 }));
  });

  it('with immediateAppends, asks the store to commit each append at once', async () => {
    const plain = setup();
    await plain.repository.handle('1', () => ({ type: 'Opened', data: { owner: 'ann' } }));
    const immediate = setup({ immediateAppends: true });
    await immediate.repository.handle('1', () => ({ type: 'Opened', data: { owner: 'ann' } }));
    await immediate.repository.execute('1', { kind: 'deposit', amount: 5 });
    assert.deepEqual(plain.backend.immediate, [false]);
    assert.deepEqual(immediate.backend.immediate, [true, true]);
  });

  it('refuses bad options', async () => {
    const { store } = setup();
    assert.throws(() => new AggregateRepository(store, { category: 'a-b', decider: account }), /category/);
    await assert.rejects(
      new AggregateRepository(store, { category: 'plain', decider: account }).snapshot('x'),
      /without snapshots/,
    );
    assert.throws(
      () => new AggregateRepository(store, { category: 'a', decider: {} as never }),
      /initialState/,
    );
    assert.throws(
      () => new AggregateRepository(store, { category: 'a', decider: account, snapshots: { every: 0 } }),
      /every/,
    );
    assert.throws(
      () => new AggregateRepository(store, { category: 'a', decider: account, maxAttempts: 0 }),
      /maxAttempts/,
    );
    assert.throws(
      () =>
        new AggregateRepository(store, { category: 'a', decider: account, immediateAppends: 'yes' as never }),
      /immediateAppends/,
    );
  });
});
