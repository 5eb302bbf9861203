import type { ListParkedQuery, ParkedEvent, ParkedSelection, ParkedSummary } from '../backend.js';
import type { ParkedEventStore } from '../parking.js';

/** Parked events in process memory: the memory backend's, and those of subscriptions without a name. */
export class MemoryParkedEvents implements ParkedEventStore {
  /** By subscription, then position. */
  readonly #bySubscription = new Map<string, Map<number, ParkedEvent>>();

  async parkEvents(events: readonly ParkedEvent[]): Promise<void> {
    for (const event of events) {
      let parked = this.#bySubscription.get(event.subscription);
      if (parked === undefined) {
        parked = new Map();
        this.#bySubscription.set(event.subscription, parked);
      }
      parked.set(event.position, { ...event, keys: [...event.keys] });
    }
  }

  async listParked(subscription: string, query: ListParkedQuery = {}): Promise<ParkedEvent[]> {
    const { after = 0, limit = 1000 } = query;
    const parked = [...(this.#bySubscription.get(subscription)?.values() ?? [])];
    return parked
      .filter((event) => event.position > after)
      .sort((a, b) => a.position - b.position)
      .slice(0, limit)
      .map((event) => ({ ...event, keys: [...event.keys] }));
  }

  async removeParked(subscription: string, selection: ParkedSelection): Promise<number> {
    const parked = this.#bySubscription.get(subscription);
    if (parked === undefined) return 0;
    let removed = 0;
    for (const position of selection === 'all' ? [...parked.keys()] : selection) {
      if (parked.delete(position)) removed++;
    }
    if (parked.size === 0) this.#bySubscription.delete(subscription);
    return removed;
  }

  async requestParkedRetry(subscription: string, selection: ParkedSelection): Promise<number> {
    const parked = this.#bySubscription.get(subscription);
    if (parked === undefined) return 0;
    let marked = 0;
    for (const position of selection === 'all' ? [...parked.keys()] : selection) {
      const event = parked.get(position);
      if (event === undefined) continue;
      parked.set(position, { ...event, retryRequested: true });
      marked++;
    }
    return marked;
  }

  async summarizeParked(subscription: string): Promise<ParkedSummary> {
    const parked = [...(this.#bySubscription.get(subscription)?.values() ?? [])];
    return { parked: parked.length, retryRequested: parked.filter((event) => event.retryRequested).length };
  }

  async countParked(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const [subscription, parked] of this.#bySubscription) counts[subscription] = parked.size;
    return counts;
  }
}
