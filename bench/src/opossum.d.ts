// opossum ships no types (they live in @types/opossum, not installed): the little the benchmark uses.
declare module 'opossum' {
  interface CircuitBreakerOptions {
    /** Milliseconds before a call times out; false for no timeout (default 10,000). */
    timeout?: number | false;
    /** Concurrent calls allowed; further calls are rejected (default: unlimited). */
    capacity?: number;
  }

  class CircuitBreaker<TArgs extends unknown[] = unknown[], TResult = unknown> {
    constructor(action: (...args: TArgs) => Promise<TResult>, options?: CircuitBreakerOptions);
    fire(...args: TArgs): Promise<TResult>;
    /** Stops the rolling-statistics timers. */
    shutdown(): void;
  }

  export default CircuitBreaker;
}
