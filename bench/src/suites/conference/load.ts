/**
 * The open-loop load generator: whole registrations started at a fixed arrival rate, whatever happens to the
 * ones already running, each timed from its *scheduled* start (so a late start, or a queue anywhere, shows in
 * the latencies instead of hiding: no coordinated omission).
 *
 * A registration, all over the HTTP API:
 *   POST /api/public/conferences/:slug/orders (one seat of each of the two types) → 202 {orderId, orderToken}
 *   (every /api/orders/:id request below carries the order token as its bearer token)
 *   GET /api/orders/:id every `windowPollMs` until it answers the order with its total (priced)  ← the window
 *   PUT /api/orders/:id/registrant → 204
 *   GET /api/orders/:id?wait=10 until the order is `reserved`
 *   POST /api/orders/:id/payment → 201 {paymentId}
 *   POST /api/payments/:paymentId/accept → 204
 *   GET /api/orders/:id?wait=10&until=confirmed,… until it is `confirmed`              ← confirmation
 *
 * Every registration of a rate shares one deadline (the end of the arrivals plus the drain): one still running
 * then is counted as unfinished and abandoned (its request destroyed). Failures are counted by kind, never thrown:
 * a registration that fails gives up (its order, if placed, is left to expire). Each registration's record (its
 * order, when it was accepted and confirmed, how it failed) comes back too, for tests that follow every order.
 */
import { cpus } from 'node:os';
import { percentile } from '../../stats.js';
import { type Answer, type ApiClient, failureLabel, UnexpectedAnswerError } from './client.js';
import { machineCpuSeconds } from './deployments.js';
import { ORDER_TOTAL } from './setup.js';

export interface LoadSettings {
  /** Registrations started per second. */
  readonly rate: number;
  /** How long registrations keep arriving. */
  readonly durationMs: number;
  /** How long after the last arrival the run waits for the registrations still running. */
  readonly drainMs: number;
  /** Poll interval while waiting for the priced order (bounds the window's resolution). */
  readonly windowPollMs: number;
  /** Server-side wait per GET while waiting for the reservation and the confirmation (`?wait=`, seconds). */
  readonly reserveWaitSeconds: number;
  /** Registrations (by index) that stop once their seats are reserved, leaving the order unpaid; default none. */
  readonly leaveUnpaid?: (index: number) => boolean;
}

export interface Target {
  readonly client: ApiClient;
  readonly slug: string;
  readonly seatTypeIds: readonly string[];
}

export interface CpuUse {
  /** Cores busy on average in the app processes (user + system time ÷ wall time). */
  readonly app: number | undefined;
  /** Cores busy in this process (the generator). */
  readonly generator: number;
  /** Cores busy on the whole machine (everything: app, servers, generator, anything else). */
  readonly machine: number | undefined;
}

export interface RateOutcome {
  readonly rate: number;
  /** Registrations started (= scheduled: the generator starts every one, late or not). */
  readonly started: number;
  /** Started per second over the arrival span (the rate, unless the generator itself fell behind). */
  readonly startedPerSec: number;
  readonly confirmed: number;
  /**
   * Confirmed orders per second: the confirmed ones ÷ (the span of their arrivals + how much the confirmation time
   * grew over it). A system that keeps up confirms as fast as orders arrive and its confirmation time does not
   * grow; one that falls behind builds a backlog, which shows as that growth (see `completedRate`).
   */
  readonly completedPerSec: number;
  /** Registrations that failed (an unexpected answer or a network error), by kind. */
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  /** Registrations still running at the deadline, by the step they were in. */
  readonly unfinished: number;
  readonly unfinishedSteps: Record<string, number>;
  /** Registrations that stopped once reserved, as `leaveUnpaid` asked. */
  readonly leftUnpaid: number;
  /** Placing → priced order visible, ms, ascending (one per registration that got that far). */
  readonly windowMs: Float64Array;
  /** Placing → confirmed, ms, ascending. */
  readonly confirmationMs: Float64Array;
  /** How late the generator started registrations, ms: p99 and max. */
  readonly startLagP99Ms: number;
  readonly startLagMaxMs: number;
  /** Wall time of the whole rate, drain included, ms. */
  readonly elapsedMs: number;
  /** HTTP requests sent. */
  readonly requests: number;
  readonly cpu: CpuUse;
  /** Every registration, in arrival order. */
  readonly registrations: readonly RegistrationRecord[];
}

/** One registration as the generator saw it; times are `performance.now()` ms. */
export interface RegistrationRecord {
  /** Its place in the arrival order. */
  readonly index: number;
  /** The web port it went to. */
  readonly port: number;
  readonly scheduled: number;
  /** Set once the app answered 202 to the order: its id and token, and when. */
  order?: { readonly id: string; readonly token: string; readonly acceptedAt: number };
  /** Placing → priced order visible, ms. */
  window?: number;
  /** Placing → confirmed, ms. */
  confirmation?: number;
  confirmedAt?: number;
  /** Why it gave up (by kind, see failureLabel), when, and the answer that made it, if one did. */
  failure?: string;
  failedAt?: number;
  failedAnswer?: Answer;
  /** The step it is in, or ended in ('done', or LEFT_UNPAID). */
  step: string;
}

/** The step of a registration that stopped once its seats were reserved (`leaveUnpaid`). */
export const LEFT_UNPAID = 'left unpaid';

class DeadlineReached extends Error {}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs one rate: `rate × durationMs` registrations started on schedule over `targets` in turn, then waits (up to
 * the drain) for them to end. `appCpuSeconds` reads the app processes' CPU time, for the CPU figures.
 */
export async function runRate(
  targets: readonly Target[],
  settings: LoadSettings,
  appCpuSeconds: () => number | undefined,
): Promise<RateOutcome> {
  const count = Math.max(1, Math.round((settings.rate * settings.durationMs) / 1000));
  const interval = 1000 / settings.rate;
  const registrations: RegistrationRecord[] = [];
  const running: Promise<void>[] = [];
  const lags = new Float64Array(count);
  let requests = 0;

  const cpuAtStart = { app: appCpuSeconds(), generator: process.cpuUsage(), machine: machineCpuSeconds() };
  const t0 = performance.now() + 5;
  const deadline = t0 + settings.durationMs + settings.drainMs;

  /** One request, bounded by the deadline; answers or throws (network error, timeout, deadline). */
  const call = (
    target: Target,
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<Answer> => {
    const left = deadline - performance.now();
    if (left <= 0) return Promise.reject(new DeadlineReached());
    requests++;
    return target.client.send(method, path, {
      body,
      timeoutMs: left,
      ...(token === undefined ? {} : { token }),
    });
  };

  const register = async (target: Target, scheduled: number, state: RegistrationRecord): Promise<void> => {
    const unexpected = (answer: Answer) => new UnexpectedAnswerError(answer);
    const wait = async (ms: number) => {
      if (performance.now() + ms >= deadline) throw new DeadlineReached();
      await sleep(ms);
    };
    try {
      state.step = 'place order';
      const placed = await call(target, 'POST', `/api/public/conferences/${target.slug}/orders`, {
        seats: target.seatTypeIds.map((seatTypeId) => ({ seatTypeId, quantity: 1 })),
      });
      if (placed.status !== 202) throw unexpected(placed);
      const { orderId, orderToken } = placed.body as { orderId?: unknown; orderToken?: unknown };
      state.order = { id: String(orderId), token: String(orderToken), acceptedAt: performance.now() };
      const orderPath = `/api/orders/${String(orderId)}`;
      // The order answers only to its token.
      const onOrder = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) =>
        call(target, method, path, body, String(orderToken));

      state.step = 'priced order';
      for (;;) {
        const answer = await onOrder('GET', orderPath);
        if (answer.status === 200 && (answer.body as { total?: number }).total === ORDER_TOTAL) break;
        if (answer.status !== 200 && answer.status !== 404) throw unexpected(answer);
        await wait(settings.windowPollMs);
      }
      state.window = performance.now() - scheduled;

      state.step = 'registrant';
      const named = await onOrder('PUT', `${orderPath}/registrant`, {
        firstName: 'Ada',
        lastName: 'Bench',
        email: 'ada@bench.example',
      });
      if (named.status !== 204) throw unexpected(named);

      state.step = 'reservation';
      for (;;) {
        const seconds = Math.min(settings.reserveWaitSeconds, (deadline - performance.now()) / 1000);
        if (seconds <= 0) throw new DeadlineReached();
        const answer = await onOrder('GET', `${orderPath}?wait=${seconds.toFixed(3)}`);
        if (answer.status !== 200) throw unexpected(answer);
        const status = (answer.body as { status?: string }).status;
        if (status === 'reserved') break;
        if (status !== 'pending') throw new Error(`order ${status}`);
      }
      if (settings.leaveUnpaid?.(state.index) === true) {
        state.step = LEFT_UNPAID;
        return;
      }

      state.step = 'payment';
      const payment = await onOrder('POST', `${orderPath}/payment`);
      if (payment.status !== 201) throw unexpected(payment);
      const paymentId = String((payment.body as { paymentId?: unknown }).paymentId);
      state.step = 'accept payment';
      const accepted = await call(target, 'POST', `/api/payments/${paymentId}/accept`);
      if (accepted.status !== 204) throw unexpected(accepted);

      state.step = 'confirmation';
      for (;;) {
        const seconds = Math.min(settings.reserveWaitSeconds, (deadline - performance.now()) / 1000);
        if (seconds <= 0) throw new DeadlineReached();
        // The server answers once the order is confirmed (or can no longer be): no polling.
        const answer = await onOrder(
          'GET',
          `${orderPath}?wait=${seconds.toFixed(3)}&until=confirmed,rejected,expired`,
        );
        if (answer.status !== 200) throw unexpected(answer);
        const status = (answer.body as { status?: string }).status;
        if (status === 'confirmed') break;
        if (status !== 'reserved') throw new Error(`order ${status}`);
      }
      state.confirmedAt = performance.now();
      state.confirmation = state.confirmedAt - scheduled;
      state.step = 'done';
    } catch (error) {
      const timedOut =
        error instanceof DeadlineReached ||
        (error instanceof Error && error.name === 'RequestTimeoutError') ||
        performance.now() >= deadline;
      if (!timedOut) {
        state.failure = failureLabel(state.step, error);
        state.failedAt = performance.now();
        if (error instanceof UnexpectedAnswerError) state.failedAnswer = error.answer;
      }
    }
  };

  // Arrivals: every registration whose time has come is started, then the generator sleeps until the next one.
  let next = 0;
  while (next < count) {
    const now = performance.now();
    while (next < count && t0 + next * interval <= now) {
      const scheduled = t0 + next * interval;
      lags[next] = now - scheduled;
      const target = targets[next % targets.length] as Target;
      const state: RegistrationRecord = {
        index: next,
        port: target.client.port,
        scheduled,
        step: 'place order',
      };
      registrations.push(state);
      running.push(register(target, scheduled, state));
      next++;
    }
    if (next < count) await sleep(Math.max(0, t0 + next * interval - performance.now()));
  }
  const lastStart = performance.now();
  await Promise.all(running);
  const end = performance.now();

  const cpuAtEnd = { app: appCpuSeconds(), generator: process.cpuUsage(cpuAtStart.generator) };
  const machineAtEnd = machineCpuSeconds();
  const wallSeconds = (end - t0) / 1000;
  const machineCores = (): number | undefined => {
    if (cpuAtStart.machine === undefined || machineAtEnd === undefined) return undefined;
    const total = machineAtEnd.total - cpuAtStart.machine.total;
    return total > 0 ? ((machineAtEnd.busy - cpuAtStart.machine.busy) / total) * coreCount() : undefined;
  };

  const errorKinds: Record<string, number> = {};
  const unfinishedSteps: Record<string, number> = {};
  const windows: number[] = [];
  const confirmations: number[] = [];
  const confirmedScheduled: number[] = [];
  for (const r of registrations) {
    if (r.window !== undefined) windows.push(r.window);
    if (r.confirmation !== undefined) {
      confirmations.push(r.confirmation);
      confirmedScheduled.push(r.scheduled);
    } else if (r.failure !== undefined) errorKinds[r.failure] = (errorKinds[r.failure] ?? 0) + 1;
    else if (r.step !== LEFT_UNPAID) unfinishedSteps[r.step] = (unfinishedSteps[r.step] ?? 0) + 1;
  }
  const sorted = (values: number[]) => Float64Array.from(values).sort();
  const confirmed = confirmations.length;
  const sortedLags = lags.slice().sort();
  return {
    rate: settings.rate,
    started: count,
    startedPerSec: (count * 1000) / Math.max(settings.durationMs, lastStart - t0 + interval),
    confirmed,
    completedPerSec: completedRate(confirmedScheduled, confirmations, interval),
    errors: Object.values(errorKinds).reduce((sum, n) => sum + n, 0),
    errorKinds,
    unfinished: Object.values(unfinishedSteps).reduce((sum, n) => sum + n, 0),
    unfinishedSteps,
    leftUnpaid: registrations.filter((r) => r.step === LEFT_UNPAID).length,
    windowMs: sorted(windows),
    confirmationMs: sorted(confirmations),
    startLagP99Ms: sortedLags[Math.min(count - 1, Math.floor(count * 0.99))] ?? 0,
    startLagMaxMs: sortedLags[count - 1] ?? 0,
    elapsedMs: end - t0,
    requests,
    cpu: {
      app:
        cpuAtStart.app === undefined || cpuAtEnd.app === undefined
          ? undefined
          : (cpuAtEnd.app - cpuAtStart.app) / wallSeconds,
      generator: (cpuAtEnd.generator.user + cpuAtEnd.generator.system) / 1e6 / wallSeconds,
      machine: machineCores(),
    },
    registrations,
  };
}

/**
 * Confirmed orders per second, from the confirmed registrations in arrival order (their scheduled starts and
 * confirmation times, ms): count ÷ (arrival span + backlog growth). The growth is how much the confirmation time
 * rose over the span: the slope between the first and the last tenth (medians of each, so that single slow orders
 * do not count as a backlog) times the span, never below 0. At a rate the system keeps up with this is the
 * arrival rate; beyond it, the rate it confirmed at.
 */
export function completedRate(
  scheduled: readonly number[],
  confirmation: readonly number[],
  interval: number,
): number {
  const n = scheduled.length;
  if (n === 0) return 0;
  const span = (scheduled[n - 1] as number) - (scheduled[0] as number) + interval;
  const tenth = Math.max(1, Math.floor(n / 10));
  const median = (values: readonly number[]) => percentile(values, 50);
  const rise = median(confirmation.slice(n - tenth)) - median(confirmation.slice(0, tenth));
  const run = median(scheduled.slice(n - tenth)) - median(scheduled.slice(0, tenth));
  const growth = run > 0 ? Math.max(0, (rise / run) * span) : 0;
  return (n * 1000) / (span + growth);
}

/** Logical cores of the machine (as the results file's `machine.cores` counts them). */
export const coreCount = (): number => Math.max(1, cpus().length);
