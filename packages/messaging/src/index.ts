export * from './backend.js';
export * from './errors.js';
export * from './routing.js';
export * from './memory/memory-backend.js';
