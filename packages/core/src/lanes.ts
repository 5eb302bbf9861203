import { assertCount } from './validate.js';

/** A piece of work and the lane it belongs to: the work of one lane runs one piece at a time, in order. */
export interface LaneWork {
  readonly lane: string;
  run(): unknown;
}

/**
 * Runs `work` in lanes: each lane's pieces one at a time in the order given, up to `concurrency` lanes at once, so
 * a round trip per piece bounds one lane rather than all of them. A failure ends its own lane only: every other lane
 * still runs to its end before this rejects with the first failure (in the order the lanes first appear). A caller
 * that retries the whole batch then finds the work before the failure done already.
 */
export async function runInLanes(work: Iterable<LaneWork>, concurrency: number): Promise<void> {
  assertCount('concurrency', concurrency, 1);
  const lanes = new Map<string, LaneWork[]>();
  for (const piece of work) {
    const lane = lanes.get(piece.lane);
    if (lane === undefined) lanes.set(piece.lane, [piece]);
    else lane.push(piece);
  }
  const queue = [...lanes.values()];
  const failures: { readonly index: number; readonly error: unknown }[] = [];
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < queue.length; index = next++) {
      try {
        for (const piece of queue[index] as LaneWork[]) await piece.run();
      } catch (error) {
        failures.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  if (failures.length > 0) throw failures.reduce((first, f) => (f.index < first.index ? f : first)).error;
}
