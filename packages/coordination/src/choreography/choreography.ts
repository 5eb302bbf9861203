import { assertObject, InvalidOptionsError } from '@stratus/core';
import {
  assertQueueName,
  assertTopicName,
  type Consumer,
  type ConsumerOptions,
  type Messaging,
  type ReceivedMessage,
} from '@stratus/messaging';
import type { SagaCorrelationView } from './correlation-view.js';
import { type EmittedSagaEvent, emitterOf, type ParticipantDefinition } from './participant.js';
import {
  KIND_HEADER,
  PARTICIPANT_HEADER,
  SAGA_EVENT_KINDS,
  type SagaEventBody,
  sagaMessageId,
} from './saga-event.js';

export interface ChoreographyOptions {
  readonly messaging: Messaging;
  /** The topic every event of these sagas is published on. */
  readonly topic: string;
}

export interface RunOptions {
  /** The subscription queue; default `<topic>.<participant>` (`<topic>.view` for a view). */
  readonly queue?: string;
  readonly consumer?: ConsumerOptions;
}

/** A message body that is not a saga event: the consumer's retries end in the dead-letter queue. */
function checkEventBody(body: unknown): SagaEventBody {
  const event = body as Partial<SagaEventBody> | null;
  if (
    typeof event !== 'object' ||
    event === null ||
    typeof event.type !== 'string' ||
    typeof event.sagaId !== 'string' ||
    typeof event.participant !== 'string' ||
    !SAGA_EVENT_KINDS.includes(event.kind as SagaEventBody['kind'])
  ) {
    throw new InvalidOptionsError(
      'message.body',
      'expected a saga event ({ type, sagaId, participant, kind, data })',
    );
  }
  return event as SagaEventBody;
}

/**
 * Wires a choreographed (event-driven, decentralised) saga over one messaging topic: each participant runs on
 * its own subscription, filtered to the event types it reacts to, and publishes what its handlers emit with
 * ids derived from the message it handled, so a redelivered message (the bus retries failed handlers) publishes
 * duplicates the subscribers drop. Every message carries the saga id as its correlation id. There is no central
 * coordinator: failure events reach the participants that react to them with their compensations.
 */
export class Choreography {
  readonly messaging: Messaging;
  readonly topic: string;

  constructor(options: ChoreographyOptions) {
    assertObject('options', options as unknown);
    const { messaging, topic } = options;
    if (typeof messaging?.topic !== 'function')
      throw new InvalidOptionsError('messaging', 'expected a Messaging');
    assertTopicName(topic);
    this.messaging = messaging;
    this.topic = topic;
  }

  /** Creates the topic (idempotent). */
  setup(): Promise<void> {
    return this.messaging.createTopic(this.topic);
  }

  /** Publishes the event that starts saga `sagaId`; starting it again publishes a duplicate that is dropped. */
  async start(sagaId: string, type: string, data: unknown = null): Promise<void> {
    if (typeof sagaId !== 'string' || sagaId.length === 0 || sagaId.length > 200)
      throw new InvalidOptionsError('sagaId', 'expected a string of 1 to 200 characters');
    if (typeof type !== 'string' || type.length === 0)
      throw new InvalidOptionsError('type', 'expected an event type');
    await this.#publish(sagaId, 'initiator', [{ type, kind: 'started', data }], (i, e) =>
      sagaMessageId('start', sagaId, String(i), e.type),
    );
  }

  /** Runs a participant on its subscription (created if missing); close the returned consumer to stop it. */
  async run(participant: ParticipantDefinition, options: RunOptions = {}): Promise<Consumer<unknown>> {
    const queue = options.queue ?? `${this.topic}.${participant.name}`;
    assertQueueName(queue);
    const emit = emitterOf(participant);
    await this.messaging.subscribe(queue, {
      topics: this.topic,
      filter: { subject: Object.keys(participant.reactsTo) },
    });
    return this.messaging.consume(
      queue,
      async (message: ReceivedMessage<unknown>, context) => {
        const event = checkEventBody(message.body);
        const handler = Object.hasOwn(participant.reactsTo, event.type)
          ? participant.reactsTo[event.type]
          : undefined;
        if (handler === undefined) return;
        const returned = await handler(event, {
          sagaId: event.sagaId,
          idempotencyKey: `${participant.name}:${message.id}`,
          emit,
          signal: context.signal,
        });
        const emitted =
          returned === undefined ? [] : Array.isArray(returned) ? returned : [returned as EmittedSagaEvent];
        // Checked again here: a handler may build its events by hand.
        const checked = emitted.map((e: EmittedSagaEvent) => emit(e?.type, e?.data));
        await this.#publish(event.sagaId, participant.name, checked, (i, e) =>
          sagaMessageId(participant.name, message.id, String(i), e.type),
        );
      },
      options.consumer,
    );
  }

  /** Feeds a correlation view from its own subscription to every event of the topic. */
  async runView(view: SagaCorrelationView, options: RunOptions = {}): Promise<Consumer<unknown>> {
    const queue = options.queue ?? `${this.topic}.view`;
    assertQueueName(queue);
    await this.messaging.subscribe(queue, { topics: this.topic });
    return this.messaging.consume(
      queue,
      (message: ReceivedMessage<unknown>) => {
        view.apply(checkEventBody(message.body), { id: message.id, at: message.enqueuedAt });
      },
      options.consumer,
    );
  }

  async #publish(
    sagaId: string,
    participant: string,
    events: readonly EmittedSagaEvent[],
    idOf: (index: number, event: EmittedSagaEvent) => string,
  ): Promise<void> {
    if (events.length === 0) return;
    await this.messaging.topic<SagaEventBody>(this.topic).publishBatch(
      events.map((event, i) => ({
        body: { type: event.type, sagaId, participant, kind: event.kind, data: event.data },
        id: idOf(i, event),
        correlationId: sagaId,
        subject: event.type,
        headers: { [KIND_HEADER]: event.kind, [PARTICIPANT_HEADER]: participant },
      })),
    );
  }
}
