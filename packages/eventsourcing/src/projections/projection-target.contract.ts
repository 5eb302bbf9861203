/**
 * The contract every ProjectionTarget passes (SQLite, PostgreSQL): registration, leases, fenced atomic commits,
 * activation and removal. Each adapter's test file calls `projectionTargetContract` with a fixture that knows how to
 * make and read a one-column table in its database.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError, immediateBackoff } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { RecordedEvent } from '../backend.js';
import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import type { ProjectionRunnerEvent } from './projection.js';
import { ProjectionRunner } from './projection-runner.js';
import type { ProjectionTarget } from './target.js';

export interface ProjectionTargetFixture<Tx> {
  readonly target: ProjectionTarget<Tx>;
  /** Creates `table` with one text column `id`, primary key. */
  createTable(tx: Tx, table: string): void | Promise<void>;
  dropTable(tx: Tx, table: string): void | Promise<void>;
  insert(tx: Tx, table: string, id: string): void | Promise<void>;
  /** The ids in `table`, sorted; rejects when the table does not exist. */
  ids(table: string): Promise<string[]>;
}

const T0 = 1_750_000_000_000;

export function projectionTargetContract<Tx>(
  kind: string,
  open: () => Promise<ProjectionTargetFixture<Tx>>,
): void {
  describe(`ProjectionTarget contract: ${kind}`, () => {
    it('registers a version as building at position 0 and runs its setup once', async () => {
      const f = await open();
      let setups = 0;
      const setup = (tx: Tx) => {
        setups++;
        return f.createTable(tx, 'reg_v1');
      };
      await f.target.prepare('reg', 1, setup);
      await f.target.prepare('reg', 1, setup);
      assert.equal(setups, 1);
      const [state, ...others] = await f.target.versions('reg');
      assert.equal(others.length, 0);
      assert.deepEqual(
        { ...state },
        {
          name: 'reg',
          version: 1,
          status: 'building',
          position: 0,
          lastEventAt: 0,
          owner: undefined,
          leaseUntil: 0,
        },
      );
      assert.deepEqual(await f.ids('reg_v1'), []);
      assert.deepEqual(await f.target.versions('unknown'), []);
    });

    it('grants a lease to one owner until it expires; the owner renews and releases it', async () => {
      const f = await open();
      await f.target.prepare('lease', 1, (tx) => f.createTable(tx, 'lease_v1'));
      assert.equal(await f.target.acquireLease('lease', 1, 'a', T0, 1000), true);
      assert.equal(await f.target.acquireLease('lease', 1, 'b', T0 + 500, 1000), false, 'held by a');
      assert.equal(await f.target.acquireLease('lease', 1, 'a', T0 + 900, 1000), true, 'a renews');
      assert.equal(
        await f.target.acquireLease('lease', 1, 'b', T0 + 1500, 1000),
        false,
        'renewed to T0+1900',
      );
      assert.equal((await f.target.versions('lease'))[0]?.leaseUntil, T0 + 1900);
      await f.target.releaseLease('lease', 1, 'b');
      assert.equal((await f.target.versions('lease'))[0]?.owner, 'a', 'only the owner releases');
      await f.target.releaseLease('lease', 1, 'a');
      assert.equal((await f.target.versions('lease'))[0]?.owner, undefined);
      assert.equal(await f.target.acquireLease('lease', 1, 'b', T0 + 1000, 1000), true, 'free once released');
      assert.equal(await f.target.acquireLease('lease', 1, 'a', T0 + 2001, 1000), true, 'free once expired');
      assert.equal((await f.target.versions('lease'))[0]?.owner, 'a');
      assert.equal(await f.target.acquireLease('missing', 1, 'a', T0, 1000), false, 'no such view');
    });

    it("commits a batch's writes and the position together, only for the owner at the expected position", async () => {
      const f = await open();
      await f.target.prepare('orders', 1, (tx) => f.createTable(tx, 'orders_v1'));
      await f.target.acquireLease('orders', 1, 'a', T0, 10_000);
      assert.equal(
        await f.target.commit('orders', 1, 'a', 0, 7, T0 + 7, (tx) => f.insert(tx, 'orders_v1', 'x')),
        true,
      );
      let state = (await f.target.versions('orders'))[0];
      assert.equal(state?.position, 7);
      assert.equal(state?.lastEventAt, T0 + 7);
      assert.equal(
        await f.target.commit('orders', 1, 'b', 7, 9, T0, (tx) => f.insert(tx, 'orders_v1', 'by-b')),
        false,
        'not the owner',
      );
      assert.equal(
        await f.target.commit('orders', 1, 'a', 0, 9, T0, (tx) => f.insert(tx, 'orders_v1', 'stale')),
        false,
        'the view is no longer at 0',
      );
      const failing = (tx: Tx): void | Promise<void> => {
        const inserted = f.insert(tx, 'orders_v1', 'half');
        const fail = (): never => {
          throw new Error('projection bug');
        };
        // Synchronous where the target's transactions are (SQLite), asynchronous where they may be.
        return inserted instanceof Promise ? inserted.then(fail) : fail();
      };
      await assert.rejects(f.target.commit('orders', 1, 'a', 7, 9, T0, failing), /projection bug/);
      state = (await f.target.versions('orders'))[0];
      assert.equal(state?.position, 7, 'a failed batch moves nothing');
      assert.deepEqual(await f.ids('orders_v1'), ['x'], 'and writes nothing');
      // Any owner name, quotes and backslashes too, and fractional times.
      const odd = 'o\'wner\\ "x"';
      await f.target.prepare('odd', 1, (tx) => f.createTable(tx, 'odd_v1'));
      assert.equal(await f.target.acquireLease('odd', 1, odd, T0, 10_000), true);
      assert.equal(
        await f.target.commit('odd', 1, odd, 0, 3, T0 + 0.25, (tx) => f.insert(tx, 'odd_v1', 'y')),
        true,
      );
      assert.deepEqual(
        [(await f.target.versions('odd'))[0]?.position, (await f.target.versions('odd'))[0]?.lastEventAt],
        [3, T0 + 0.25],
      );
    });

    it('lets exactly one of two racing commits from the same position through', async () => {
      const f = await open();
      await f.target.prepare('race', 1, (tx) => f.createTable(tx, 'race_v1'));
      await f.target.acquireLease('race', 1, 'a', T0, 10_000);
      const outcomes = await Promise.all(
        ['p', 'q'].map((id) =>
          f.target.commit('race', 1, 'a', 0, 5, T0, (tx) => f.insert(tx, 'race_v1', id)),
        ),
      );
      assert.deepEqual(outcomes.toSorted(), [false, true]);
      assert.equal((await f.ids('race_v1')).length, 1);
      assert.equal((await f.target.versions('race'))[0]?.position, 5);
    });

    it('keeps exactly one version active, retires the one it replaces, and removes retired versions', async () => {
      const f = await open();
      for (const version of [1, 2, 3]) {
        await f.target.prepare('swap', version, (tx) => f.createTable(tx, `swap_v${version}`));
      }
      await f.target.activate('swap', 1);
      await f.target.activate('swap', 2);
      const statuses = async () => (await f.target.versions('swap')).map((v) => [v.version, v.status]);
      assert.deepEqual(await statuses(), [
        [1, 'retired'],
        [2, 'active'],
        [3, 'building'],
      ]);
      await f.target.activate('swap', 2);
      assert.deepEqual((await statuses())[1], [2, 'active'], 'activating the active version changes nothing');
      await assert.rejects(f.target.activate('swap', 9), InvalidOptionsError);
      await f.target.remove('swap', 1, (tx) => f.dropTable(tx, 'swap_v1'));
      await assert.rejects(f.ids('swap_v1'));
      assert.deepEqual(await statuses(), [
        [2, 'active'],
        [3, 'building'],
      ]);
    });

    it('a runner parks a poison event and the rest of its stream, applies the others, then the parked on retry', async () => {
      const f = await open();
      const store = new EventStore({
        backend: new MemoryEventStoreBackend(),
        clock: new VirtualClock({ now: T0 }),
      });
      // Ten rounds of one event in each of three streams; s-1's fifth event is poison until fixed.
      for (let round = 0; round < 10; round++) {
        for (const stream of ['s-0', 's-1', 's-2'])
          await store.appendToStream(stream, [{ type: 'Noted', data: { round } }]);
      }
      let broken = true;
      const runner = new ProjectionRunner(
        store,
        f.target,
        {
          name: 'poison',
          version: 1,
          setup: (tx) => f.createTable(tx, 'poison_v1'),
          apply(tx, event: RecordedEvent) {
            const { round } = event.data as { round: number };
            if (broken && event.streamName === 's-1' && round === 4) throw new Error('poison');
            return f.insert(tx, 'poison_v1', `${event.streamName}:${round}`);
          },
        },
        { maxAttempts: 2, retryBackoff: immediateBackoff() },
      );
      const events: ProjectionRunnerEvent[] = [];
      runner.events.on((event) => events.push(event));
      const running = runner.start();
      await runner.caughtUp;
      // Two attempts at the whole batch, then one event at a time: the poison event failed twice more.
      assert.equal(events.filter((e) => e.type === 'apply-failed').length, 4);
      const ids = await f.ids('poison_v1');
      assert.equal(ids.length, 24);
      assert.ok(!ids.some((id) => id.startsWith('s-1:') && Number(id.slice(4)) >= 4));
      const parked = await store.parked('projection:poison@1');
      assert.deepEqual(
        parked.map((p) => [p.streamName, p.reason]),
        [['s-1', 'failed'], ...Array.from({ length: 5 }, () => ['s-1', 'blocked'])],
      );
      assert.equal(runner.parkedCount, 6);
      broken = false;
      assert.equal(await runner.retryParked([parked[0]?.position as number]), 1);
      await waitUntil(async () => (await f.ids('poison_v1')).length === 30, 'the parked events are applied');
      // Each is taken off the lot once its apply has committed, so the last may still be on it for a moment.
      await waitUntil(
        async () => (await store.parked('projection:poison@1')).length === 0,
        'the lot is empty',
      );
      assert.equal(runner.parkedCount, 0);
      await runner.stop();
      await running;
    });
  });
}
