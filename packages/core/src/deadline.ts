import { type Clock, MAX_TIMER_MS, type TimerHandle } from './clock.js';

/**
 * Something that expires at a point in time, scheduled on a DeadlineScheduler. The scheduler's bookkeeping
 * lives in the two fields below, on the object itself, so scheduling a deadline allocates nothing.
 */
export interface Deadline {
  /** Scheduler bookkeeping: the bucket holding this deadline while it is scheduled; start undefined. */
  deadlineBucket: DeadlineBucket | undefined;
  /** Scheduler bookkeeping: the position in that bucket. */
  deadlineIndex: number;
  /** Called once when the deadline passes (not called if it was removed first). */
  expire(): void;
}

/** Deadlines that expire in the same millisecond. */
export interface DeadlineBucket {
  /** Monotonic ms at which every deadline in it expires. */
  readonly due: number;
  readonly items: Deadline[];
}

const schedulers = new WeakMap<Clock, DeadlineScheduler>();

/**
 * One real timer per clock for any number of pending deadlines. Deadlines are grouped in buckets of one
 * millisecond (rounded up, so nothing expires early); adding and removing are O(1) (push and swap-remove),
 * and only a new bucket touches the min-heap of bucket times. An emptied bucket stays until its time has
 * come (or the timer finds it empty), so calls arriving in the same millisecond reuse it: memory is bounded by
 * the distinct due milliseconds within the longest timeout, not by the number of calls. The timer is armed for the earliest live bucket
 * and is not cleared when deadlines are removed: it simply finds nothing when it fires. So a loop of
 * short calls costs no setTimeout/clearTimeout pair per call, and at most one timer is pending per clock.
 * While no deadline is pending a Node timer is unref'd, so it never keeps the process alive on its own.
 */
export class DeadlineScheduler {
  /** The scheduler shared by every component using `clock`. */
  static for(clock: Clock): DeadlineScheduler {
    let scheduler = schedulers.get(clock);
    if (scheduler === undefined) {
      scheduler = new DeadlineScheduler(clock);
      schedulers.set(clock, scheduler);
    }
    return scheduler;
  }

  readonly clock: Clock;
  readonly #buckets = new Map<number, DeadlineBucket>();
  /** Min-heap of the due times of the buckets in #buckets (one entry per bucket). */
  readonly #heap: number[] = [];
  /** Cache of the bucket used last: calls in the same millisecond share it without a map lookup. */
  #last: DeadlineBucket | undefined;
  #size = 0;
  #timer: TimerHandle | undefined;
  #timerDue = Number.POSITIVE_INFINITY;
  readonly #onTimer = () => this.#fire();

  private constructor(clock: Clock) {
    this.clock = clock;
  }

  /** Deadlines currently scheduled. */
  get size(): number {
    return this.#size;
  }

  /** True while `deadline` is scheduled: not yet expired and not removed. */
  static isScheduled(deadline: Deadline): boolean {
    return deadline.deadlineBucket !== undefined;
  }

  /** Schedules `deadline` to expire at monotonic time `at` (ms on this scheduler's clock). */
  add(deadline: Deadline, at: number): void {
    if (deadline.deadlineBucket !== undefined) this.remove(deadline);
    const due = Math.ceil(at);
    let bucket = this.#last;
    if (bucket === undefined || bucket.due !== due) {
      bucket = this.#buckets.get(due);
      if (bucket === undefined) {
        bucket = { due, items: [] };
        this.#buckets.set(due, bucket);
        heapPush(this.#heap, due);
      }
      this.#last = bucket;
    }
    deadline.deadlineIndex = bucket.items.length;
    deadline.deadlineBucket = bucket;
    bucket.items.push(deadline);
    if (this.#size++ === 0) setRef(this.#timer, true);
    if (due < this.#timerDue) this.#arm(due);
  }

  /** Unschedules `deadline`; a no-op when it already expired or was removed. */
  remove(deadline: Deadline): void {
    const bucket = deadline.deadlineBucket;
    if (bucket === undefined) return;
    const { items } = bucket;
    const index = deadline.deadlineIndex;
    const moved = items.pop()!;
    if (moved !== deadline) {
      items[index] = moved;
      moved.deadlineIndex = index;
    }
    deadline.deadlineBucket = undefined;
    if (--this.#size === 0) setRef(this.#timer, false);
  }

  #arm(due: number): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timerDue = due;
    // Any clock may be a thin wrapper of Node's timers: never ask for more than they hold; farther deadlines
    // re-arm when the timer fires.
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, due - this.clock.monotonic()));
    this.#timer = this.clock.setTimeout(this.#onTimer, delay, {
      unref: this.#size === 0,
    });
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    const heap = this.#heap;
    const now = this.clock.monotonic();
    while (heap.length > 0) {
      const due = heap[0]!;
      const bucket = this.#buckets.get(due)!;
      // Keep live future buckets; drop empty ones (all their deadlines were removed) and fire due ones.
      if (bucket.items.length > 0 && due > now) break;
      heapPop(heap);
      this.#buckets.delete(due);
      if (this.#last === bucket) this.#last = undefined;
      const { items } = bucket;
      // Pop one at a time: an expiry may synchronously remove other deadlines of this same bucket.
      for (let deadline = items.pop(); deadline !== undefined; deadline = items.pop()) {
        deadline.deadlineBucket = undefined;
        this.#size--;
        try {
          deadline.expire();
        } catch (error) {
          // One faulty expiry must not stop the others; surface it like an uncaught timer error would.
          queueMicrotask(() => {
            throw error;
          });
        }
      }
    }
    if (heap.length > 0) this.#arm(heap[0]!);
  }
}

/** Keeps a Node timer referenced only while deadlines are pending; other clocks' handles are left alone. */
function setRef(handle: TimerHandle | undefined, ref: boolean): void {
  if (handle === undefined) return;
  const timer = handle as { ref?: () => void; unref?: () => void };
  if (typeof timer.ref === 'function' && typeof timer.unref === 'function') {
    if (ref) timer.ref();
    else timer.unref();
  }
}

function heapPush(heap: number[], value: number): void {
  let i = heap.length;
  heap.push(value);
  while (i > 0) {
    const parent = (i - 1) >>> 1;
    if (heap[parent]! <= value) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = value;
}

function heapPop(heap: number[]): void {
  const last = heap.pop()!;
  const n = heap.length;
  if (n === 0) return;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= n) break;
    const right = left + 1;
    const child = right < n && heap[right]! < heap[left]! ? right : left;
    if (heap[child]! >= last) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = last;
}

/**
 * Where a call's cancellation comes from: the `{ signal }` options a caller passes, or an ExecuteContext
 * handed on by an outer policy.
 */
export type SignalSource = { readonly signal?: AbortSignal | undefined } | undefined;

/**
 * A signal source whose AbortSignal is only created when someone reads `signal`. Creating an AbortSignal
 * costs about 1.7 µs on Node 20, more than a whole policy call, and most operations never look at it. Code
 * that only checks for cancellation, or hands the source on, should use `isCancelled`, `cancelReasonOf` and
 * `remainingMs` (which accept any SignalSource) instead of reading `signal`, so the signal stays unmade.
 */
export abstract class LazySignalSource {
  /** The signal, created on first read. */
  abstract get signal(): AbortSignal;
  /** True when the signal is aborted, or would be if it were created now. Never creates it. */
  abstract get cancelled(): boolean;
  /** The abort reason while `cancelled`. */
  abstract get cancelReason(): unknown;
  /** Milliseconds before the signal is due to abort on a deadline; Infinity without one. */
  abstract remainingMs(): number;
}

/** Whether `source` is cancelled, without creating a lazy signal. */
export function isCancelled(source: SignalSource): boolean {
  if (source === undefined) return false;
  if (source instanceof LazySignalSource) return source.cancelled;
  return source.signal?.aborted === true;
}

/** The reason `source` was cancelled (undefined while it is not), without creating a lazy signal. */
export function cancelReasonOf(source: SignalSource): unknown {
  if (source === undefined) return undefined;
  if (source instanceof LazySignalSource) return source.cancelReason;
  return source.signal?.reason;
}

interface SignalDeadline {
  readonly clock: Clock;
  /** Monotonic ms on `clock`. */
  readonly at: number;
}

const signalDeadlines = new WeakMap<AbortSignal, SignalDeadline>();

/**
 * Records that `signal` will abort at monotonic time `at` on `clock` (a timeout does this for the signal it
 * hands to its operation), so code that holds only the signal still sees the time left.
 */
export function setSignalDeadline(signal: AbortSignal, clock: Clock, at: number): void {
  signalDeadlines.set(signal, { clock, at });
}

/**
 * Milliseconds left before `source` is due to abort on a deadline (Infinity when none, never below 0). A
 * nested timeout, a retry deciding whether a wait is worth starting, or an operation setting a database
 * statement timeout can all ask; pass the context itself rather than its signal to keep a lazy signal unmade.
 */
export function remainingMs(source: AbortSignal | SignalSource): number {
  if (source === undefined) return Number.POSITIVE_INFINITY;
  if (source instanceof LazySignalSource) return source.remainingMs();
  const signal = source instanceof AbortSignal ? source : source.signal;
  const deadline = signal === undefined ? undefined : signalDeadlines.get(signal);
  if (deadline === undefined) return Number.POSITIVE_INFINITY;
  return Math.max(0, deadline.at - deadline.clock.monotonic());
}
