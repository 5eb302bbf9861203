// The Redis backend's topics: their settings, subscriptions and publishing, each one call or script.
import type { OutgoingMessage, PublishOutcome, ReplayFrom, Subscription, TopicSettings } from '../backend.js';
import { UnknownTopicError } from '../errors.js';
import { isScriptError, type RedisConnection } from './connection.js';
import { type Argument, pushMessages } from './encoding.js';

/**
 * The publish script reads the subscription table and evaluates patterns and filters in Lua (a port of
 * routing.ts), so a publish is one atomic call that can never miss a subscription bound before it started, and
 * subscribe-with-replay copies retained messages in the same call that binds. Queue operations touch one hash
 * slot (`{queue}` hash tags); publish, subscribe and the queue registry span slots, so on a Redis Cluster give a
 * keyPrefix with a hash tag (`'{stratus}:'`) to keep every key in one slot.
 */
export class RedisTopics {
  readonly #connection: RedisConnection;

  constructor(connection: RedisConnection) {
    this.#connection = connection;
  }

  async put(name: string, settings: TopicSettings): Promise<void> {
    await (await this.#connection.client()).hset(
      this.#connection.key('topics'),
      name,
      JSON.stringify(settings),
    );
  }

  async get(name: string): Promise<TopicSettings | undefined> {
    const json = await (await this.#connection.client()).hget(this.#connection.key('topics'), name);
    return json === null ? undefined : (JSON.parse(json) as TopicSettings);
  }

  async list(): Promise<string[]> {
    return (await (await this.#connection.client()).hkeys(this.#connection.key('topics'))).sort();
  }

  async delete(name: string): Promise<boolean> {
    return (await this.#connection.run('deleteTopic', [this.#connection.key('topics')], [name])) === 1;
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const { queue } = subscription;
    const binding = JSON.stringify({ topics: subscription.topics, filter: subscription.filter });
    const mode = typeof replay === 'object' ? 'since' : replay;
    const since = typeof replay === 'object' ? String(replay.since) : '';
    await this.#connection.run(
      'subscribe',
      [
        this.#connection.key('topics'),
        this.#connection.key('subscriptions'),
        this.#connection.queueKey(queue),
      ],
      [queue, binding, mode, since, String(now)],
      queue,
    );
  }

  async unsubscribe(queue: string): Promise<boolean> {
    return (await (await this.#connection.client()).hdel(this.#connection.key('subscriptions'), queue)) === 1;
  }

  async listSubscriptions(): Promise<Subscription[]> {
    const table = await (await this.#connection.client()).hgetall(this.#connection.key('subscriptions'));
    return Object.entries(table)
      .map(([queue, json]) => {
        const { topics, filter } = JSON.parse(json) as Omit<Subscription, 'queue'>;
        return { queue, topics, filter: filter ?? undefined };
      })
      .sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    const args: Argument[] = [topic, String(now)];
    pushMessages(args, messages);
    let reply: Buffer[][];
    try {
      reply = (await this.#connection.run(
        'publish',
        [
          this.#connection.key('topics'),
          this.#connection.key('subscriptions'),
          this.#connection.key('retained:next'),
        ],
        args,
      )) as Buffer[][];
    } catch (error) {
      if (isScriptError(error, 'STRATUS_UNKNOWN_TOPIC')) throw new UnknownTopicError(topic);
      throw error;
    }
    return messages.map((message, i) => ({
      id: message.id,
      deliveredTo: (reply[i] ?? []).map((queue) => queue.toString()),
    }));
  }
}
