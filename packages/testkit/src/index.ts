export * from './servers.js';
export * from './virtual-clock.js';
