import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RecordedEvent } from '../backend.js';
import {
  DISPATCHED_RECORD,
  emptyFold,
  foldOnto,
  foldProcess,
  instanceOf,
  STEP_RECORD,
  type StepRecord,
} from './process-stream.js';

let version = 0;
const record = (type: string, data: unknown): RecordedEvent => ({
  id: `r-${++version}`,
  type,
  data,
  metadata: {},
  schemaVersion: 1,
  streamName: 'p-1',
  streamVersion: version,
  globalPosition: version,
  recordedAt: 0,
});
const step = (eventId: string, eventType: string, rest: Partial<StepRecord> = {}) =>
  record(STEP_RECORD, {
    eventId,
    eventType,
    commands: [],
    timeouts: [],
    cancelledTimeouts: [],
    completed: false,
    ...rest,
  });
const command = (id: string) => ({ id, type: 'C', data: { id } });
const timeout = (id: string, type: string) => ({ id, type, data: {}, dueAt: 100 });

describe('foldProcess', () => {
  it('gives the latest state, the handled ids, what is still to send and the live timeouts', () => {
    version = 0;
    const instance = foldProcess('1', { n: 0 }, [
      step('e-1', 'Start', {
        state: { n: 1 },
        commands: [command('c-1'), command('c-2')],
        timeouts: [timeout('t-1', 'A')],
      }),
      record(DISPATCHED_RECORD, { ids: ['c-1'] }),
      step('e-2', 'Other', { timeouts: [timeout('t-2', 'B')] }),
      record('written-by-a-newer-version', {}),
      step('t-1', 'A', { state: { n: 2 }, cancelledTimeouts: ['B'], commands: [command('c-3')] }),
      record(DISPATCHED_RECORD, { ids: ['c-2', 't-1', 't-2'] }),
    ]);
    assert.deepEqual(instance.state, { n: 2 });
    assert.equal(instance.version, 6);
    assert.equal(instance.completed, false);
    assert.deepEqual([...instance.handledEventIds], ['e-1', 'e-2', 't-1']);
    assert.deepEqual(instance.pending, [{ kind: 'command', command: command('c-3') }]);
    assert.deepEqual([...instance.liveTimeouts.keys()], [], 'A fired, B was cancelled');
  });

  it('drops every timeout on completion and starts from the initial state without records', () => {
    version = 0;
    const done = foldProcess('1', { n: 0 }, [
      step('e-1', 'Start', { timeouts: [timeout('t-1', 'A')] }),
      step('e-2', 'End', { completed: true }),
    ]);
    assert.equal(done.completed, true);
    assert.equal(done.liveTimeouts.size, 0);
    assert.deepEqual(done.pending, [], 'a timeout dropped before it was sent is not sent');
    const fresh = foldProcess('2', { n: 0 }, []);
    assert.deepEqual([fresh.version, fresh.state, fresh.completed], [0, { n: 0 }, false]);
  });

  it('folds on record by record to what a fold of the whole stream gives, leaving earlier instances as they were', () => {
    version = 0;
    const records = [
      step('e-1', 'Start', { state: { n: 1 }, commands: [command('c-1')], timeouts: [timeout('t-1', 'A')] }),
      record(DISPATCHED_RECORD, { ids: ['c-1', 't-1'] }),
      step('t-1', 'A', { state: { n: 2 }, commands: [command('c-2')], timeouts: [timeout('t-2', 'A')] }),
      step('e-2', 'End', { completed: true }),
    ];
    let fold = emptyFold('1', { n: 0 });
    const instances = [instanceOf(fold)];
    const copiesWhenMade = [structuredClone(instances[0])];
    for (const next of records) {
      fold = foldOnto(fold, [next]);
      instances.push(instanceOf(fold));
      copiesWhenMade.push(structuredClone(instances.at(-1)));
    }
    assert.deepEqual(instances.at(-1), foldProcess('1', { n: 0 }, records));
    assert.deepEqual(instances, copiesWhenMade, 'folding on changed no earlier instance');
    assert.deepEqual(
      instances.map((i) => [i.version, i.handledEventIds.size, i.pending.length, i.liveTimeouts.size]),
      [
        [0, 0, 0, 0],
        [1, 1, 2, 1],
        [2, 1, 0, 1],
        [3, 2, 2, 1],
        [4, 3, 1, 0],
      ],
    );
  });
});
