export * from './abort.js';
export * from './backoff.js';
export * from './clock.js';
export * from './deadline.js';
export * from './errors.js';
export * from './events.js';
export * from './ids.js';
export * from './validate.js';
