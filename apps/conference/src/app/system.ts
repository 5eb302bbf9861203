/**
 * Puts the system together from Stratus blocks. Commands a registrant or owner issues run in process (the V3
 * optimisation: their errors reach the caller as 4xx); commands the process manager and reactions issue travel on
 * queues (retried with backoff, dead-lettered when they keep failing), availability commands in one session per
 * conference so each conference has a single writer. Events drive the process manager, the reactions and the read
 * models through checkpointed subscriptions and projection runners.
 */

import { LeaderElection } from '@stratus/coordination';
import { type Clock, runInLanes, systemClock } from '@stratus/core';
import {
  CommandBus,
  ProcessManager,
  ProcessRouter,
  type ProjectionRunner,
  queueTimeoutScheduler,
  type RecordedEvent,
  type Subscription,
} from '@stratus/eventsourcing';
import { type Consumer, QueueMetricsCollector } from '@stratus/messaging';
import type { RateLimitStore } from '@stratus/resilience';
import { Counter, Gauge, type Registry } from 'prom-client';
import { type CommandType, SEATS_AVAILABILITY_COMMANDS } from '../domain/contracts.js';
import type { PaymentState } from '../domain/payment.js';
import {
  type RegistrationProcessEvent,
  type RegistrationProcessState,
  registrationProcessDefinition,
} from '../domain/registration-process.js';
import { conferenceView } from '../read-models/conference-view.js';
import { orderView } from '../read-models/order-view.js';
import type { ConferenceConfig } from './config.js';
import {
  APPEND_DELAY_MS,
  type HeardViewChange,
  openInfrastructure,
  poisonOptions,
  type ViewChange,
} from './infrastructure.js';
import { documentQueries, type Queries } from './queries.js';
import {
  ConferenceManagement,
  createRepositories,
  integrationHandler,
  integrationLane,
  registerCommandHandlers,
} from './services.js';
import { DocumentWaits } from './waiting.js';
import { liveWorkers, WorkerPresence } from './worker-presence.js';

/** Commands issued on the web (a registrant's or owner's request), run in the web process. */
const WEB_COMMANDS: readonly CommandType[] = [
  'RegisterToConference',
  'AssignRegistrantDetails',
  'ConfirmOrder',
  'StartOrderPayment',
  'InitiateThirdPartyProcessorPayment',
  'CompleteThirdPartyProcessorPayment',
  'CancelThirdPartyProcessorPayment',
  'AssignSeat',
  'UnassignSeat',
];

/** Processes (and confirmed orders) the event subscriptions handle at once, each one's events in order. */
const SUBSCRIPTION_CONCURRENCY = 256;
const SUBSCRIPTION_BATCH = 4000;

const COMMAND_QUEUE = 'commands';
const SEATS_QUEUE = 'seats';
const TIMEOUT_QUEUE = 'timeouts';

export interface ConferenceSystem {
  readonly config: ConferenceConfig;
  /** Where the data lives (for logs). */
  readonly description: string;
  readonly clock: Clock;
  /** Runs web-issued commands in process; anything else goes to its queue. */
  readonly commands: CommandBus;
  readonly management: ConferenceManagement;
  readonly queries: Queries;
  /**
   * A payment as its own stream says now, undefined when there is none. Unlike the payments view it has no lag: the
   * simulated processor settles a payment the moment it was started.
   */
  payment(paymentId: string): Promise<PaymentState | undefined>;
  /** Where the web's abuse limits count (shared by the web processes when scaled out). */
  readonly rateLimits: RateLimitStore;
  /** Resolves with `check`'s first non-undefined answer, re-checked as views change, or undefined after `timeoutMs`. */
  waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined>;
  /**
   * Says that a view document cannot exist yet: its id was just made and the command creating it is not sent yet.
   * Where documents are cached, reading it then costs no query until its creation is heard.
   */
  absent(collection: string, id: string): void;
  /** Whether the system can serve: every background part is running. */
  ready(): boolean;
  /**
   * How many events each subscription and view has parked (read from the store, so any process sees them all):
   * each is an order or a view that waits for an operator (`stratus parked`).
   */
  parkedEvents(): Promise<Record<string, number>>;
  /** The worker processes (or threads) alive in the deployment: with none, orders wait in the queues. */
  liveWorkers(): Promise<number>;
  /** What the background parts report: view lag and the process manager's outcomes (empty where none run). */
  backgroundStats(): Promise<BackgroundStats>;
  /** Adds the system's gauges (queues, view lag, process results) to a Prometheus registry. */
  registerMetrics(registry: Registry): void;
  stop(): Promise<void>;
}

export interface BackgroundStats {
  /** Events appended that each view run here has not applied yet. */
  readonly viewLag: readonly { readonly view: string; readonly events: number }[];
  /** What the registration process manager did, by kind (started, handled, ignored...). */
  readonly processOutcomes: readonly (readonly [kind: string, count: number])[];
  /** Event handlers run here that are failing now (subscriptions, views), with their consecutive failed attempts. */
  readonly failingHandlers: readonly { readonly handler: string; readonly attempts: number }[];
}

/** Where the system reports what an operator must know (a pino logger will do). */
export interface SystemLog {
  error(details: object, message: string): void;
  info(details: object, message: string): void;
}

/** What the subscriptions and view runners of a system report when an event is parked. */
interface ParkedEventReport {
  readonly type: 'event-parked';
  readonly position: number;
  readonly streamName: string;
  readonly reason: string;
  readonly attempts: number;
  readonly error: string;
}

export interface StartOptions {
  readonly clock?: Clock;
  /**
   * Where a web part hears the view changes that runners in another thread of this process commit (the embedded
   * default's worker thread): with it, waits wake at once and documents are cached until they change. 'all' means
   * changes may have gone unreported (that thread was restarted).
   */
  readonly viewChanges?: (listener: (change: HeardViewChange) => void) => void;
  /**
   * Hears the documents this part's view runners change, once committed, or 'all' (a view started serving), to pass
   * on to another thread.
   */
  readonly onViewChange?: (keys: ViewChange) => void;
  /** The stats of background parts running in another thread of this process, for a web part's metrics. */
  readonly backgroundStats?: () => Promise<BackgroundStats>;
  /** Shared with the other threads of this process that open the embedded database (sqliteThreadLock()). */
  readonly sqliteThreadLock?: SharedArrayBuffer;
  /** Told of every parked event (an error: someone must look at it). */
  readonly log?: SystemLog;
}

/**
 * Starts the system's parts for the configured role: the web parts (in-process web commands, management, queries),
 * the worker parts (command consumers, the process manager and reactions under one leader at a time, read-model
 * runners, each single-active through its lease), or both in one process (the embedded default).
 */
export async function startConferenceSystem(
  config: ConferenceConfig,
  options: StartOptions = {},
): Promise<ConferenceSystem> {
  const clock = options.clock ?? systemClock;
  const infrastructure = await openInfrastructure(config, clock, options.sqliteThreadLock);
  const { store, messaging } = infrastructure;
  // Consumers renew a lock while its handler runs, so a short one only bounds how long a dead worker holds work.
  const queueOptions = { lockDurationMs: config.leaseMs, maxDeliveryCount: 5 };
  await messaging.createQueue(COMMAND_QUEUE, queueOptions);
  await messaging.createQueue(SEATS_QUEUE, { ...queueOptions, sessions: true });
  await messaging.createQueue(TIMEOUT_QUEUE, queueOptions);
  const views = [conferenceView, orderView];
  const runsWorker = config.role !== 'web';
  // Without view runners in this process or word from them, poll the views briskly instead. Documents are cached
  // until they change where each change is reported once committed: embedded (the runners report after their
  // commit), and over PostgreSQL's NOTIFY, sent in each batch's transaction with the documents' new content (nothing
  // is cached while LISTEN is not in effect, and once it is again everything counts as changed). Workers listen too:
  // their own runners report before the commit, which only drops documents that the NOTIFY then brings.
  const viewChanges = options.viewChanges ?? infrastructure.viewChanges;
  const hearsChanges = runsWorker || viewChanges !== undefined;
  const waits = new DocumentWaits(clock, hearsChanges ? 250 : 25, {
    cacheDocuments: config.databaseUrl === undefined ? hearsChanges : viewChanges !== undefined,
  });
  viewChanges?.((change) => {
    if (change === 'unheard') waits.unheard();
    else if (change === 'all') waits.hearingAgain();
    else waits.changed(change);
  });
  const queries = documentQueries(
    waits.track(infrastructure.reader(conferenceView)),
    waits.track(infrastructure.reader(orderView)),
    clock,
  );
  const repositories = createRepositories(store);
  const routing = {
    messaging,
    clock,
    queueOf: (type: string) =>
      (SEATS_AVAILABILITY_COMMANDS as readonly string[]).includes(type) ? SEATS_QUEUE : COMMAND_QUEUE,
    sessionOf: (command: { type: string; data: unknown }) =>
      (SEATS_AVAILABILITY_COMMANDS as readonly string[]).includes(command.type)
        ? `seatsAvailability-${(command.data as { conferenceId: string }).conferenceId}`
        : undefined,
  };
  const handlerDependencies = {
    repositories,
    clock,
    reservationWindowMs: config.reservationWindowMs,
    async prices(conferenceId: string) {
      const seatTypes = (await queries.conference(conferenceId))?.seatTypes ?? [];
      return new Map(seatTypes.map((seat) => [seat.id, seat.priceCents]));
    },
  };
  // The web runs only the web's own commands locally; everything else goes to the queues.
  const webBus = new CommandBus(routing);
  registerCommandHandlers(webBus, handlerDependencies, WEB_COMMANDS);

  const consumers: Consumer<unknown>[] = [];
  const onViewChange = options.onViewChange;
  const viewChanged = (keys: ViewChange) => {
    if (keys === 'all') waits.changedAll();
    else waits.changed(keys);
    onViewChange?.(keys);
  };
  const processOutcomes = new Map<string, number>();
  /** The subscriptions this process runs now (while it leads) and its view runners, by name. */
  const handlers = new Map<string, { readonly failingAttempts: number }>();
  const reportParked = (handler: string, event: ParkedEventReport | { readonly type: string }) => {
    if (event.type !== 'event-parked') return;
    const { position, streamName, reason, attempts, error } = event as ParkedEventReport;
    options.log?.error({ handler, position, streamName, reason, attempts, error }, 'event parked');
  };
  /**
   * A background part: its parked events and store failures are logged. It rides out a database that fails (each
   * failed read or lease is retried with backoff, and counts as not ready meanwhile); one that stops on an error
   * anyway leaves the process failed.
   */
  const background = <Part extends Subscription | ProjectionRunner<unknown>>(
    what: string,
    name: string,
    part: Part,
    done: Promise<void>,
  ) => {
    handlers.set(name, part);
    part.events.on((event) => {
      reportParked(name, event);
      if (event.type === 'store-error') {
        const { attempt, retryInMs, error } = event;
        options.log?.error(
          { part: what, attempt, retryInMs, err: error },
          `${what} could not reach the database`,
        );
      }
    });
    done.catch((error: unknown) => {
      failed = true;
      options.log?.error({ part: what, err: error }, `${what} stopped on an error`);
    });
    return part;
  };
  const runners: ProjectionRunner<unknown>[] = [];
  /** The subscriptions this process runs while it leads. */
  let leaderSubscriptions: Subscription[] = [];
  let election: LeaderElection | undefined;
  let manager: ProcessManager<RegistrationProcessState, RegistrationProcessEvent> | undefined;
  let failed = false;
  if (runsWorker) {
    const workerBus = new CommandBus(routing);
    registerCommandHandlers(workerBus, handlerDependencies);
    // Process-manager and reaction commands always travel on queues.
    const queuedBus = new CommandBus(routing);
    manager = new ProcessManager<RegistrationProcessState, RegistrationProcessEvent>({
      definition: registrationProcessDefinition({ graceMs: config.reservationGraceMs }),
      store,
      commands: queuedBus,
      timeouts: queueTimeoutScheduler(messaging, TIMEOUT_QUEUE),
      clock,
      // Saves a stream read per event; an instance another worker changed meanwhile fails its append, rereads. What a
      // step sent is marked by the process's next step (it follows within seconds), not by an append of its own: a
      // crash may send the last second's commands again, with the same ids, which the queues drop as duplicates.
      cache: { deferSentMarksMs: 1000 },
    });
    manager.events.on((event) => processOutcomes.set(event.type, (processOutcomes.get(event.type) ?? 0) + 1));
    const router = new ProcessRouter([manager]);
    const react = integrationHandler({
      repositories,
      send: (type, data, id) => queuedBus.send(type, data, { id }),
    });
    consumers.push(
      workerBus.consume(COMMAND_QUEUE, { concurrency: 16 }),
      // A busy conference's availability commands run in batches: each completes as the next one starts.
      workerBus.consume(SEATS_QUEUE, { concurrency: 16, sessionBatch: 16 }),
      router.consumeTimeouts(messaging, TIMEOUT_QUEUE, { concurrency: 4 }),
    );
    // The event subscriptions run in one worker at a time: the leader's, until its term ends.
    election = new LeaderElection({
      store: infrastructure.leases,
      name: 'conference-subscriptions',
      leaseMs: config.leaseMs,
      clock,
    });
    const subscription = (what: string, started: Subscription) =>
      background(what, started.name, started, started.done);
    election.onElected(async (term) => {
      // Both handle events idempotently, so a crash may replay up to a second of them: one checkpoint a second.
      const subscriptions = [
        subscription(
          'the registration process subscription',
          router.subscribe(store, {
            ...poisonOptions(config),
            name: 'registration-process',
            checkpointEveryMs: 1000,
            batchSize: SUBSCRIPTION_BATCH,
            appendDelayMs: APPEND_DELAY_MS,
            concurrency: SUBSCRIPTION_CONCURRENCY,
          }),
        ),
        subscription(
          'the integration subscription',
          store.subscribe({
            ...poisonOptions(config),
            name: 'integration',
            checkpointEveryMs: 1000,
            batchSize: SUBSCRIPTION_BATCH,
            appendDelayMs: APPEND_DELAY_MS,
            // A round trip per confirmed order would bound them all: different orders go at once (integrationLane).
            handleBatch: (events: readonly RecordedEvent[]) =>
              runInLanes(
                events.flatMap((event) => {
                  const lane = integrationLane(event);
                  return lane === undefined ? [] : [{ lane, run: () => react(event) }];
                }),
                SUBSCRIPTION_CONCURRENCY,
              ),
          }),
        ),
      ];
      leaderSubscriptions = subscriptions;
      await new Promise<void>((resolve) => {
        if (term.signal.aborted) resolve();
        else term.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      if (leaderSubscriptions === subscriptions) leaderSubscriptions = [];
      for (const stopping of subscriptions) {
        await stopping.stop();
        handlers.delete(stopping.name);
      }
    });
    election.events.on((event) => {
      if (event.type === 'work-failed') failed = true;
    });
    await election.start();
  }
  const presence = runsWorker ? new WorkerPresence(infrastructure.leases, clock, config.leaseMs) : undefined;
  await presence?.start();
  if (runsWorker)
    for (const view of views) {
      const runner = infrastructure.runner(view, viewChanged);
      const name = `projection:${view.name}@${runner.version}`;
      runners.push(background(`the view runner of ${view.name}`, name, runner, runner.start()));
    }
  const management = new ConferenceManagement(store, repositories, clock);
  // Sampled only where metrics are served (not in the embedded default's background thread).
  let queueMetrics: QueueMetricsCollector | undefined;

  const system: ConferenceSystem = {
    config,
    description: infrastructure.description,
    clock,
    commands: webBus,
    management,
    queries,
    async payment(paymentId) {
      const { state, version } = await repositories.payments.load(paymentId);
      return version === 0 ? undefined : state;
    },
    rateLimits: infrastructure.rateLimits,
    waitFor: (check, timeoutMs) => waits.waitFor(check, timeoutMs),
    absent: (collection, id) => waits.absent(collection, id),
    ready: () => !failed && [...runners, ...leaderSubscriptions].every((part) => part.storeFailures === 0),
    parkedEvents: () => store.parkedCounts(),
    liveWorkers: () => liveWorkers(infrastructure.leases, clock),
    async backgroundStats() {
      if (options.backgroundStats !== undefined) return options.backgroundStats();
      const viewLag = [];
      for (const [i, runner] of runners.entries())
        viewLag.push({ view: views[i]?.name ?? '', events: (await runner.lag()).events });
      const failingHandlers = [...handlers]
        .filter(([, handler]) => handler.failingAttempts > 0)
        .map(([handler, { failingAttempts }]) => ({ handler, attempts: failingAttempts }));
      return { viewLag, processOutcomes: [...processOutcomes], failingHandlers };
    },
    registerMetrics(registry) {
      queueMetrics ??= new QueueMetricsCollector(messaging, { intervalMs: 5000 }).start();
      registerSystemMetrics(
        registry,
        queueMetrics,
        () => system.backgroundStats(),
        () => system.parkedEvents(),
      );
    },
    async stop() {
      await presence?.stop();
      queueMetrics?.stop();
      for (const consumer of consumers) await consumer.close();
      await election?.stop();
      await manager?.recordSent();
      for (const runner of runners) await runner.stop();
      await infrastructure.close();
    },
  };
  return system;
}

/** The system's gauges: queues (sampled here), view lag and process outcomes (from wherever the background runs). */
function registerSystemMetrics(
  registry: Registry,
  queueMetrics: QueueMetricsCollector,
  backgroundStats: () => Promise<BackgroundStats>,
  parkedEvents: () => Promise<Record<string, number>>,
): void {
  new Gauge({
    name: 'conference_parked_events',
    help: 'Events a subscription or view has parked after its handler kept failing on them (see stratus parked)',
    labelNames: ['subscription'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [subscription, count] of Object.entries(await parkedEvents()))
        this.set({ subscription }, count);
    },
  });
  new Gauge({
    name: 'conference_handler_failing_attempts',
    help: 'Consecutive failed attempts of an event handler at its current event (0 while it succeeds)',
    labelNames: ['handler'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { handler, attempts } of (await backgroundStats()).failingHandlers)
        this.set({ handler }, attempts);
    },
  });
  new Gauge({
    name: 'conference_queue_messages',
    help: 'Messages per queue and state (available, scheduled, locked, waiting, deadLettered)',
    labelNames: ['queue', 'state'],
    registers: [registry],
    collect() {
      for (const { queue, stats } of queueMetrics.samples) {
        for (const state of ['available', 'scheduled', 'locked', 'waiting', 'deadLettered'] as const)
          this.set({ queue, state }, stats[state]);
      }
    },
  });
  new Gauge({
    name: 'conference_view_lag_events',
    help: 'Events appended that a read model has not applied yet (views this process runs)',
    labelNames: ['view'],
    registers: [registry],
    async collect() {
      for (const { view, events } of (await backgroundStats()).viewLag) this.set({ view }, events);
    },
  });
  new Counter({
    name: 'conference_process_manager_events_total',
    help: 'What the registration process manager did, by kind (started, handled, ignored...)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [kind, count] of (await backgroundStats()).processOutcomes) this.inc({ kind }, count);
    },
  });
}
