/**
 * The write side: a repository per aggregate, the handlers of every command (the same code whether a command runs
 * in process or arrives on a queue), conference management, and the two reactions that cross aggregates without the
 * process manager (seat quotas feeding availability; a confirmed order getting its seat assignments).
 */
import { type Clock, uuidv7 } from '@stratus/core';
import {
  AggregateRepository,
  type CommandBus,
  type CommandEnvelope,
  type Decider,
  type DomainEvent,
  DuplicateEventIdError,
  derivedId,
  type EventStore,
  type HandleOptions,
  type RecordedEvent,
  WrongExpectedVersionError,
} from '@stratus/eventsourcing';
import { accessCode } from '../domain/access-code.js';
import {
  type Conference,
  type ConferenceCommand,
  type ConferenceState,
  conferenceDecider,
  type SeatTypeFields,
} from '../domain/conference.js';
import {
  type CommandData,
  type CommandType,
  type ConferenceDetails,
  type ConferenceEvent,
  type OrderEvent,
  type Owner,
  type PaymentEvent,
  SEATS_AVAILABILITY_COMMANDS,
  type SeatAssignmentsEvent,
  type SeatsAvailabilityEvent,
} from '../domain/contracts.js';
import { ConflictError, NotFoundError } from '../domain/errors.js';
import { type OrderCommand, type OrderState, orderDecider } from '../domain/order.js';
import { type PaymentCommand, type PaymentState, paymentDecider } from '../domain/payment.js';
import type { SeatPrices } from '../domain/pricing.js';
import {
  type SeatAssignmentsCommand,
  type SeatAssignmentsState,
  seatAssignmentsDecider,
} from '../domain/seat-assignments.js';
import {
  type SeatsAvailabilityCommand,
  type SeatsAvailabilityState,
  seatsAvailabilityDecider,
  seatsAvailabilitySnapshots,
} from '../domain/seats-availability.js';

export interface Repositories {
  readonly orders: AggregateRepository<OrderState, OrderEvent, OrderCommand>;
  readonly seatsAvailability: AggregateRepository<
    SeatsAvailabilityState,
    SeatsAvailabilityEvent,
    SeatsAvailabilityCommand
  >;
  readonly seatAssignments: AggregateRepository<
    SeatAssignmentsState,
    SeatAssignmentsEvent,
    SeatAssignmentsCommand
  >;
  readonly payments: AggregateRepository<PaymentState, PaymentEvent, PaymentCommand>;
  readonly conferences: AggregateRepository<ConferenceState, ConferenceEvent, ConferenceCommand>;
}

export function createRepositories(store: EventStore): Repositories {
  // Orders, payments and assignments keep their recent states in process too: a registration's commands follow one
  // another within a second or so. A state another process changed meanwhile is caught by the append's expected
  // version, and the command is decided again on a fresh load.
  return {
    // An order's commands come from both sides in turn (the web starts its payment, the workers reserve and confirm
    // it), so its cached state is stale more often than not: it is never trusted, only topped up with the events
    // after it (one small read instead of a refused decision, its error, and that read).
    orders: new AggregateRepository(store, {
      category: 'order',
      decider: orderDecider,
      cache: { trustMs: 0 },
    }),
    // The contended aggregate: snapshots bound its replay and the cache (the Journey's memento cache, trusted for a
    // second) spares a read per command while commands for one conference come from one writer.
    seatsAvailability: new AggregateRepository(store, {
      category: 'seatsAvailability',
      decider: seatsAvailabilityDecider,
      snapshots: seatsAvailabilitySnapshots,
      cache: {},
      immediateAppends: true,
    }),
    seatAssignments: new AggregateRepository(store, {
      category: 'seatAssignments',
      decider: seatAssignmentsDecider,
      cache: {},
    }),
    payments: new AggregateRepository(store, { category: 'payment', decider: paymentDecider, cache: {} }),
    conferences: new AggregateRepository(store, { category: 'conference', decider: conferenceDecider }),
  };
}

/**
 * The events a command appends get ids derived from the command id and it becomes their correlation id: a command
 * delivered twice (a crash before the queue heard it was done) appends nothing the second time, and replies such as
 * SeatsReserved name the command they answer.
 */
function commandOptions(commandId: string): HandleOptions {
  return { correlationId: commandId, eventIds: (i) => derivedId(commandId, 'event', String(i)) };
}

async function handleOnce<State, Event extends DomainEvent, Command>(
  repository: AggregateRepository<State, Event, Command>,
  decider: Decider<State, Event, Command>,
  id: string,
  command: Command,
  commandId: string,
  /** The command creates its aggregate (under an id just made): see HandleOptions.assumeNew. */
  creates = false,
): Promise<void> {
  try {
    await repository.handle(
      id,
      (state) => (decider.decide as NonNullable<typeof decider.decide>)(command, state),
      { ...commandOptions(commandId), assumeNew: creates },
    );
  } catch (error) {
    // Its events are in the store already: this is a redelivery of a command that was handled.
    if (error instanceof DuplicateEventIdError) return;
    throw error;
  }
}

/**
 * Serialises work per key within this process: the seat availability of one conference has a single writer here,
 * as the queue's sessions give it a single writer across processes.
 */
export function keyedSerializer(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return (key, work) => {
    const run = (tails.get(key) ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => {},
      () => {},
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}

export interface CommandHandlerDependencies {
  readonly repositories: Repositories;
  /** The seat prices of a conference, in cents (from the conference read model). */
  prices(conferenceId: string): Promise<SeatPrices>;
  readonly clock: Clock;
  readonly reservationWindowMs: number;
}

type Handler<Type extends CommandType> = (command: CommandEnvelope<CommandData[Type]>) => Promise<void>;

/** The handlers of `types` (default: every command), registered on `bus`. */
export function registerCommandHandlers(
  bus: CommandBus,
  deps: CommandHandlerDependencies,
  types?: readonly CommandType[],
): void {
  const { repositories, clock } = deps;
  // Orders and payments are created under ids the web has just made.
  const order = (command: CommandEnvelope<{ orderId: string }>, decision: OrderCommand) =>
    handleOnce(
      repositories.orders,
      orderDecider,
      command.data.orderId,
      decision,
      command.id,
      decision.type === 'RegisterToConference',
    );
  const payment = (command: CommandEnvelope<{ paymentId: string }>, decision: PaymentCommand) =>
    handleOnce(
      repositories.payments,
      paymentDecider,
      command.data.paymentId,
      decision,
      command.id,
      decision.type === 'InitiateThirdPartyProcessorPayment',
    );
  const assignments = (
    command: CommandEnvelope<{ assignmentsId: string }>,
    decision: SeatAssignmentsCommand,
  ) =>
    handleOnce(
      repositories.seatAssignments,
      seatAssignmentsDecider,
      command.data.assignmentsId,
      decision,
      command.id,
    );
  const serialize = keyedSerializer();
  // A conference's availability commands are the same shape as its decisions.
  const availabilityDecision = (command: CommandEnvelope) => command as unknown as SeatsAvailabilityCommand;
  const availabilityAlone = (command: CommandEnvelope) => {
    const decision = availabilityDecision(command);
    return handleOnce(
      repositories.seatsAvailability,
      seatsAvailabilityDecider,
      decision.data.conferenceId,
      decision,
      command.id,
    );
  };
  /**
   * A conference's backlog of availability commands (one session) is decided in one go and appended in one
   * commit. A batch that cannot be (a redelivered command among them, or the first refused) goes one by one.
   */
  const availability = async (commands: readonly CommandEnvelope[]): Promise<number> => {
    const { conferenceId } = availabilityDecision(commands[0] as CommandEnvelope).data;
    const sameConference: CommandEnvelope[] = [];
    for (const command of commands) {
      if (availabilityDecision(command).data.conferenceId !== conferenceId) break;
      sameConference.push(command);
    }
    return serialize(conferenceId, async () => {
      if (sameConference.length > 1) {
        try {
          const handled = await repositories.seatsAvailability.handleBatch(
            conferenceId,
            sameConference.map((command) => ({
              decide: (state: SeatsAvailabilityState) =>
                seatsAvailabilityDecider.decide?.(availabilityDecision(command), state) ?? [],
              options: commandOptions(command.id),
            })),
          );
          return handled.decided;
        } catch {
          // Handled alone below, where its error (if it has one) is the command's.
        }
      }
      await availabilityAlone(commands[0] as CommandEnvelope);
      return 1;
    });
  };

  const handlers: {
    readonly [Type in Exclude<CommandType, SeatsAvailabilityCommand['type']>]: Handler<Type>;
  } = {
    async RegisterToConference(command) {
      const prices = await deps.prices(command.data.conferenceId);
      await order(command, {
        type: 'RegisterToConference',
        data: {
          ...command.data,
          now: clock.now(),
          accessCode: accessCode(),
          prices,
          reservationWindowMs: deps.reservationWindowMs,
        },
      });
    },
    async MarkSeatsAsReserved(command) {
      const { conferenceId } = (await repositories.orders.load(command.data.orderId)).state;
      const prices = await deps.prices(conferenceId);
      await order(command, { type: 'MarkSeatsAsReserved', data: { ...command.data, prices } });
    },
    RejectOrder: (command) => order(command, { type: 'RejectOrder', data: command.data }),
    AssignRegistrantDetails: (command) =>
      order(command, { type: 'AssignRegistrantDetails', data: command.data }),
    ConfirmOrder: (command) => order(command, { type: 'ConfirmOrder', data: command.data }),
    StartOrderPayment: (command) => order(command, { type: 'StartOrderPayment', data: command.data }),
    CancelOrderPayment: (command) => order(command, { type: 'CancelOrderPayment', data: command.data }),
    AssignSeat: (command) => assignments(command, { type: 'AssignSeat', data: command.data }),
    UnassignSeat: (command) => assignments(command, { type: 'UnassignSeat', data: command.data }),
    InitiateThirdPartyProcessorPayment: (command) =>
      payment(command, { type: 'InitiateThirdPartyProcessorPayment', data: command.data }),
    CompleteThirdPartyProcessorPayment: (command) =>
      payment(command, {
        type: 'CompleteThirdPartyProcessorPayment',
        data: { ...command.data, now: clock.now() },
      }),
    CancelThirdPartyProcessorPayment: (command) =>
      payment(command, { type: 'CancelThirdPartyProcessorPayment', data: command.data }),
    RefundThirdPartyProcessorPayment: (command) =>
      payment(command, { type: 'RefundThirdPartyProcessorPayment', data: command.data }),
  };
  for (const [type, handler] of Object.entries(handlers)) {
    if (types === undefined || types.includes(type as CommandType))
      bus.register(type, handler as Handler<CommandType>);
  }
  const availabilityTypes = SEATS_AVAILABILITY_COMMANDS.filter((type) => types?.includes(type) ?? true);
  if (availabilityTypes.length > 0) bus.registerBatch(availabilityTypes, availability);
}

// ---------------------------------------------------------------------------------------------------------------
// Conference management (the owner's side; CRUD in the Journey, event-sourced here)

export interface NewConference {
  readonly slug: string;
  readonly owner: Owner;
  readonly details: ConferenceDetails;
}

export class ConferenceManagement {
  readonly #store: EventStore;
  readonly #conferences: Repositories['conferences'];
  readonly #clock: Clock;

  constructor(store: EventStore, repositories: Repositories, clock: Clock) {
    this.#store = store;
    this.#conferences = repositories.conferences;
    this.#clock = clock;
  }

  /**
   * Validates, claims the slug (a stream per slug, created once: the index that keeps slugs unique), then records
   * the conference. Throws ValidationError, or ConflictError for a slug already taken.
   */
  async create(input: NewConference): Promise<{ conferenceId: string; slug: string; accessCode: string }> {
    const conferenceId = uuidv7(this.#clock.now());
    const command: ConferenceCommand = {
      type: 'CreateConference',
      data: { conferenceId, accessCode: accessCode(), ...input },
    };
    // Decided (and validated) before the slug is claimed, so a bad request claims nothing.
    const events = (conferenceDecider.decide as NonNullable<typeof conferenceDecider.decide>)(command, null);
    try {
      await this.#store.appendToStream(
        `conferenceSlug-${input.slug.toLowerCase()}`,
        [{ type: 'SlugClaimed', data: { conferenceId } }],
        { expectedVersion: 'no-stream' },
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError)
        throw new ConflictError('The chosen conference slug is already taken.');
      throw error;
    }
    await this.#conferences.handle(conferenceId, () => events, { expectedVersion: 0 });
    return { conferenceId, slug: input.slug, accessCode: command.data.accessCode };
  }

  async get(conferenceId: string): Promise<Conference> {
    const { state } = await this.#conferences.load(conferenceId);
    if (state === null) throw new NotFoundError('Conference', conferenceId);
    return state;
  }

  update(conferenceId: string, details: ConferenceDetails): Promise<void> {
    return this.#decide({ type: 'UpdateConference', data: { conferenceId, details } });
  }

  publish(conferenceId: string): Promise<void> {
    return this.#decide({ type: 'PublishConference', data: { conferenceId } });
  }

  unpublish(conferenceId: string): Promise<void> {
    return this.#decide({ type: 'UnpublishConference', data: { conferenceId } });
  }

  /** Replaces the owner's access code with a new random one (the old one stops working); returns the new one. */
  async rotateAccessCode(conferenceId: string): Promise<string> {
    const current = (await this.get(conferenceId)).accessCode;
    let code = accessCode();
    while (code === current) code = accessCode();
    await this.#decide({ type: 'RotateAccessCode', data: { conferenceId, accessCode: code } });
    return code;
  }

  async createSeat(conferenceId: string, fields: SeatTypeFields): Promise<string> {
    const seatTypeId = uuidv7(this.#clock.now());
    await this.#decide({ type: 'CreateSeat', data: { conferenceId, seatTypeId, ...fields } });
    return seatTypeId;
  }

  updateSeat(conferenceId: string, seatTypeId: string, fields: Partial<SeatTypeFields>): Promise<void> {
    return this.#decide({ type: 'UpdateSeat', data: { conferenceId, seatTypeId, ...fields } });
  }

  deleteSeat(conferenceId: string, seatTypeId: string): Promise<void> {
    return this.#decide({ type: 'DeleteSeat', data: { conferenceId, seatTypeId } });
  }

  async #decide(command: ConferenceCommand): Promise<void> {
    await this.#conferences.handle(
      command.data.conferenceId,
      (state) => conferenceDecider.decide?.(command, state) ?? [],
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reactions outside the process manager

export interface IntegrationDependencies {
  readonly repositories: Repositories;
  /** Sends a command (to its queue); the id makes a resend after a crash a duplicate. */
  send<Type extends CommandType>(type: Type, data: CommandData[Type], id: string): Promise<unknown>;
}

/**
 * The lane of an event the integration handler reacts to (undefined for any other): a conference's seat changes go
 * in the order they happened, each confirmed order on its own.
 */
export function integrationLane(recorded: RecordedEvent): string | undefined {
  const event = recorded as unknown as ConferenceEvent | OrderEvent;
  switch (event.type) {
    case 'SeatCreated':
    case 'SeatUpdated':
    case 'SeatDeleted':
      return `conference:${event.data.conferenceId}`;
    case 'OrderConfirmed':
      return `order:${event.data.orderId}`;
    default:
      return undefined;
  }
}

/**
 * Seat quotas set by the owner become seats in the availability aggregate (the Journey's ConferenceViewModelGenerator
 * sent AddSeats/RemoveSeats; a quota change by 0 sends nothing here), and a confirmed order gets its seat
 * assignments, under the order's id so a redelivered OrderConfirmed cannot create a second set (quirk 10).
 */
export function integrationHandler(deps: IntegrationDependencies): (event: RecordedEvent) => Promise<void> {
  return async (recorded) => {
    const event = recorded as unknown as ConferenceEvent | OrderEvent;
    const commandId = derivedId(recorded.id, 'integration');
    switch (event.type) {
      case 'SeatCreated': {
        const { conferenceId, seatTypeId, quantity } = event.data;
        await deps.send('AddSeats', { conferenceId, seatTypeId, quantity }, commandId);
        return;
      }
      case 'SeatUpdated': {
        const { conferenceId, seatTypeId, quantity, previousQuantity } = event.data;
        const change = quantity - previousQuantity;
        if (change > 0)
          await deps.send('AddSeats', { conferenceId, seatTypeId, quantity: change }, commandId);
        if (change < 0)
          await deps.send('RemoveSeats', { conferenceId, seatTypeId, quantity: -change }, commandId);
        return;
      }
      case 'SeatDeleted': {
        const { conferenceId, seatTypeId, quantity } = event.data;
        await deps.send('RemoveSeats', { conferenceId, seatTypeId, quantity }, commandId);
        return;
      }
      case 'OrderConfirmed': {
        const { orderId } = event.data;
        const seats = event.data.seats ?? (await deps.repositories.orders.load(orderId)).state.seats;
        await handleOnce(
          deps.repositories.seatAssignments,
          seatAssignmentsDecider,
          orderId,
          { type: 'CreateSeatAssignments', data: { assignmentsId: orderId, orderId, seats } },
          commandId,
          true,
        );
        return;
      }
    }
  };
}
