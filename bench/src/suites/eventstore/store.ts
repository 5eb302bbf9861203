/**
 * What every event store implementation of the eventstore suite provides, so the measurements (cases.ts) are the
 * same code for all: appends with an expected version, stream reads, an aggregate rebuilt from its stream, and a
 * subscription from position 0 (catch-up) or following live appends (lag). Stratus and Emmett implement it with
 * their normal public APIs (stratus.ts, emmett.ts).
 */

export type BackendKind = 'sqlite' | 'postgres';

/** The domain event of every case (type aliases, not interfaces: Emmett wants plain records). */
export type ItemAdded = {
  readonly orderId: string;
  readonly sku: string;
  readonly quantity: number;
  readonly priceCents: number;
  readonly note: string;
};

export type BenchEvent = {
  readonly type: 'ItemAdded';
  readonly data: ItemAdded;
};

/** Aggregate streams are `order-<id>` (Stratus repositories name streams `<category>-<id>`). */
export const ORDER_CATEGORY = 'order';

/** Length of the JSON of an event's data (`{ orderId, sku, quantity, priceCents, note }`). */
export const PAYLOAD_BYTES = 200;

const NOTE = 'x'.repeat(
  PAYLOAD_BYTES -
    JSON.stringify({
      orderId: 'order-000000',
      sku: 'SKU-00000',
      quantity: 3,
      priceCents: 1999,
      note: '',
    }).length,
);

export function benchEvent(i: number): BenchEvent {
  return {
    type: 'ItemAdded',
    data: {
      orderId: `order-${String(i % 1_000_000).padStart(6, '0')}`,
      sku: `SKU-${String(i % 100_000).padStart(5, '0')}`,
      quantity: 1 + (i % 5),
      priceCents: 1999,
      note: NOTE,
    },
  };
}

export const benchEvents = (count: number, from = 0): BenchEvent[] =>
  Array.from({ length: count }, (_, i) => benchEvent(from + i));

/** The aggregate the rebuild cases fold: an order's item count and total. */
export interface OrderState {
  readonly items: number;
  readonly totalCents: number;
}

export const initialOrder = (): OrderState => ({ items: 0, totalCents: 0 });

/** Pure, as deciders require: a new state per event. */
export function evolveOrder(state: OrderState, event: { readonly data: unknown }): OrderState {
  const data = event.data as ItemAdded;
  return { items: state.items + 1, totalCents: state.totalCents + data.quantity * data.priceCents };
}

/** A running subscription. */
export interface Following {
  stop(): Promise<void>;
}

export interface StoreUnderTest {
  /**
   * Appends `events` to `stream`. `expectedVersion`: the stream's version (0: the stream must not exist), or
   * undefined for no check. Resolves with the global position of the last event appended.
   */
  append(stream: string, events: readonly BenchEvent[], expectedVersion: number | undefined): Promise<number>;
  /** Reads a whole stream; resolves with the number of events read. */
  readStream(stream: string): Promise<number>;
  /** Rebuilds the aggregate of a stream from its events (no snapshot). */
  rebuild(stream: string): Promise<OrderState>;
  /** Stratus only: the aggregate repository with snapshots. */
  readonly snapshots?: {
    /** Stores a snapshot of the stream's current state. */
    take(stream: string): Promise<void>;
    /** Rebuilds from the newest snapshot and the events after it. */
    rebuild(stream: string): Promise<OrderState>;
  };
  /**
   * Reads every event from position 0 on through the implementation's subscription, calling `onEvent` with each
   * event's global position once the implementation has handled it (`catch-up`: its subscription or consumer;
   * `live`: what the suite uses for projection lag, see the implementation).
   */
  follow(mode: 'catch-up' | 'live', onEvent: (position: number) => void): Promise<Following>;
  close(): Promise<void>;
}

/** Where an implementation keeps its data. */
export type StoreLocation = { readonly postgresUrl: string } | { readonly sqlitePath: string };

/** One implementation on one backend: "stratus-postgres", "emmett-sqlite", ... */
export interface EventStoreImplementation {
  readonly impl: string;
  readonly backend: BackendKind;
  /** The Stratus row a peer is compared with; undefined for Stratus itself. */
  readonly versus?: string;
  /** Settings this implementation runs with, for the results file. */
  readonly description: Record<string, unknown>;
  /** What the `live` subscription is (the lag case's mechanism), for its case description and notes. */
  readonly live: string;
  open(location: StoreLocation): Promise<StoreUnderTest>;
}
