export * from './definition.js';
export * from './errors.js';
export * from './ids.js';
export * from './process-manager.js';
export * from './process-stream.js';
export * from './router.js';
export * from './senders.js';
