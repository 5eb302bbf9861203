import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeDiff, diffGatewayConfigs, type GatewayConfig } from './index.js';

describe('diffGatewayConfigs', () => {
  it('names the upstreams and routes added, removed and changed, and a new route order', () => {
    const current: GatewayConfig = {
      upstreams: { a: { targets: ['http://127.0.0.1:1'] }, b: { targets: ['http://127.0.0.1:2'] } },
      routes: [
        { name: 'one', upstream: 'a' },
        { name: 'two', upstream: 'b' },
        { name: 'three', upstream: 'a' },
      ],
    };
    const next: GatewayConfig = {
      upstreams: {
        a: { targets: ['http://127.0.0.1:1', 'http://127.0.0.1:3'] },
        c: { targets: ['http://127.0.0.1:4'] },
      },
      routes: [
        { name: 'three', upstream: 'a' },
        { name: 'one', upstream: 'c' },
        { name: 'four', upstream: 'a' },
      ],
    };
    assert.deepEqual(describeDiff(diffGatewayConfigs(current, next)), [
      '+ upstream c',
      '- upstream b',
      '~ upstream a',
      '+ route four',
      '- route two',
      '~ route one',
      '~ route order',
    ]);
    assert.deepEqual(describeDiff(diffGatewayConfigs(current, current)), []);
  });
});
