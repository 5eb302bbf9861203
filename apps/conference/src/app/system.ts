/**
 * Puts the system together from Stratus blocks. Commands a registrant or owner issues run in process (the V3
 * optimisation: their errors reach the caller as 4xx); commands the process manager and reactions issue travel on
 * queues (retried with backoff, dead-lettered when they keep failing), availability commands in one session per
 * conference so each conference has a single writer. Events drive the process manager, the reactions and the read
 * models through checkpointed subscriptions and projection runners.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, systemClock } from '@stratus/core';
import {
  CommandBus,
  type DocumentReader,
  EventStore,
  ProcessManager,
  ProcessRouter,
  ProjectionRunner,
  queueTimeoutScheduler,
  type RecordedEvent,
  SqliteEventStore,
  SqliteProjectionTarget,
  type Subscription,
  sqliteDocumentProjection,
  sqliteDocumentReader,
} from '@stratus/eventsourcing';
import {
  type Consumer,
  Messaging,
  openSqlite,
  QueueMetricsCollector,
  SqliteMessageBackend,
} from '@stratus/messaging';
import { Counter, Gauge, type Registry } from 'prom-client';
import { type CommandType, SEATS_AVAILABILITY_COMMANDS } from '../domain/contracts.js';
import {
  type RegistrationProcessEvent,
  type RegistrationProcessState,
  registrationProcessDefinition,
} from '../domain/registration-process.js';
import { conferenceView } from '../read-models/conference-view.js';
import { orderView } from '../read-models/order-view.js';
import type { ConferenceConfig } from './config.js';
import { documentQueries, type Queries } from './queries.js';
import {
  ConferenceManagement,
  createRepositories,
  INTEGRATION_EVENTS,
  integrationHandler,
  registerCommandHandlers,
} from './services.js';

/** Commands issued on the web (a registrant's or owner's request), run in the web process. */
const WEB_COMMANDS: readonly CommandType[] = [
  'RegisterToConference',
  'AssignRegistrantDetails',
  'ConfirmOrder',
  'InitiateThirdPartyProcessorPayment',
  'CompleteThirdPartyProcessorPayment',
  'CancelThirdPartyProcessorPayment',
  'AssignSeat',
  'UnassignSeat',
];

const COMMAND_QUEUE = 'commands';
const SEATS_QUEUE = 'seats';
const TIMEOUT_QUEUE = 'timeouts';

export interface ConferenceSystem {
  readonly config: ConferenceConfig;
  readonly clock: Clock;
  /** Runs web-issued commands in process; anything else goes to its queue. */
  readonly commands: CommandBus;
  readonly management: ConferenceManagement;
  readonly queries: Queries;
  /** Resolves with `check`'s first non-undefined answer, re-checked as views change, or undefined after `timeoutMs`. */
  waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined>;
  /** Whether the system can serve: every background part is running. */
  ready(): boolean;
  /** Adds the system's gauges (queues, view lag, process results) to a Prometheus registry. */
  registerMetrics(registry: Registry): void;
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly clock?: Clock;
}

/** Starts the embedded system: one process, one SQLite database in the data directory. */
export async function startConferenceSystem(
  config: ConferenceConfig,
  options: StartOptions = {},
): Promise<ConferenceSystem> {
  const clock = options.clock ?? systemClock;
  mkdirSync(config.dataDir, { recursive: true });
  const database = openSqlite(join(config.dataDir, 'conference.db'), { synchronous: 'NORMAL' });
  const store = new EventStore({ backend: new SqliteEventStore({ database }), clock });
  const messaging = new Messaging({ backend: new SqliteMessageBackend({ database }), clock });
  await messaging.createQueue(COMMAND_QUEUE);
  await messaging.createQueue(SEATS_QUEUE, { sessions: true });
  await messaging.createQueue(TIMEOUT_QUEUE);
  const target = new SqliteProjectionTarget({ database });
  const conferences: DocumentReader = sqliteDocumentReader(database, target, conferenceView.name);
  const orders: DocumentReader = sqliteDocumentReader(database, target, orderView.name);
  const queries = documentQueries(conferences, orders, clock);
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
  // Everything the worker handles; the web bus keeps only the web's own commands local.
  const workerBus = new CommandBus(routing);
  registerCommandHandlers(workerBus, handlerDependencies);
  const webBus = new CommandBus(routing);
  const allHandlers = new CommandBus(routing);
  registerCommandHandlers(allHandlers, handlerDependencies);
  for (const type of WEB_COMMANDS) {
    webBus.register(type, (command) =>
      allHandlers.send(type, command.data, { id: command.id }).then(() => {}),
    );
  }
  // Process-manager and reaction commands always travel on queues.
  const queuedBus = new CommandBus(routing);

  const manager = new ProcessManager<RegistrationProcessState, RegistrationProcessEvent>({
    definition: registrationProcessDefinition({ graceMs: config.reservationGraceMs }),
    store,
    commands: queuedBus,
    timeouts: queueTimeoutScheduler(messaging, TIMEOUT_QUEUE),
    clock,
  });
  const router = new ProcessRouter([manager]);
  const react = integrationHandler({
    repositories,
    send: (type, data, id) => queuedBus.send(type, data, { id }),
  });
  const reactionTypes = new Set<string>(INTEGRATION_EVENTS);
  const subscriptions: Subscription[] = [
    router.subscribe(store, { name: 'registration-process' }),
    store.subscribe({
      name: 'integration',
      handler: (event: RecordedEvent) => (reactionTypes.has(event.type) ? react(event) : undefined),
    }),
  ];
  const consumers: Consumer<unknown>[] = [
    workerBus.consume(COMMAND_QUEUE, { concurrency: 16 }),
    workerBus.consume(SEATS_QUEUE, { concurrency: 16 }),
    router.consumeTimeouts(messaging, TIMEOUT_QUEUE, { concurrency: 4 }),
  ];
  const views = [conferenceView, orderView];
  const runners = views.map(
    (view) => new ProjectionRunner(store, target, sqliteDocumentProjection(view), { pollIntervalMs: 500 }),
  );
  const waiters = new Set<() => void>();
  for (const runner of runners) {
    runner.events.on((event) => {
      if (event.type === 'batch-applied') for (const wake of waiters) wake();
    });
  }
  const running = runners.map((runner) => runner.start());
  let failed = false;
  for (const run of running) run.catch(() => (failed = true));
  await Promise.all(runners.map((runner) => runner.caughtUp));
  const management = new ConferenceManagement(store, repositories, clock);
  const queueMetrics = new QueueMetricsCollector(messaging, { intervalMs: 5000 }).start();
  const processOutcomes = new Map<string, number>();
  manager.events.on((event) => processOutcomes.set(event.type, (processOutcomes.get(event.type) ?? 0) + 1));

  return {
    config,
    clock,
    commands: webBus,
    management,
    queries,
    async waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number) {
      const deadline = clock.now() + timeoutMs;
      for (;;) {
        const answer = await check();
        if (answer !== undefined) return answer;
        const left = deadline - clock.now();
        if (left <= 0) return undefined;
        // Woken by the next batch a view applies; the timer bounds the wait when views live in another process.
        await new Promise<void>((resolve) => {
          const timer = clock.setTimeout(done, Math.min(left, 250));
          function done() {
            clock.clearTimeout(timer);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
    },
    ready: () => !failed,
    registerMetrics(registry) {
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
        help: 'Events appended that a read model has not applied yet',
        labelNames: ['view'],
        registers: [registry],
        async collect() {
          for (const [i, runner] of runners.entries()) {
            this.set({ view: views[i]?.name }, (await runner.lag()).events);
          }
        },
      });
      new Counter({
        name: 'conference_process_manager_events_total',
        help: 'What the registration process manager did, by kind (started, handled, ignored...)',
        labelNames: ['kind'],
        registers: [registry],
        collect() {
          this.reset();
          for (const [kind, count] of processOutcomes) this.inc({ kind }, count);
        },
      });
    },
    async stop() {
      queueMetrics.stop();
      for (const consumer of consumers) await consumer.close();
      for (const subscription of subscriptions) await subscription.stop();
      for (const runner of runners) await runner.stop();
      await Promise.allSettled(running);
      await messaging.close?.();
      await store.close();
      database.close();
    },
  };
}
