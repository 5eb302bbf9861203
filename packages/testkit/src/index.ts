export * from './virtual-clock.js';
