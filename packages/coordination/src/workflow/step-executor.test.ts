import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { defineWorkflow } from './definition.js';
import { engineSetup, settle } from './fixtures/engine-setup.js';
import { RemoteAgent } from './remote-agent.js';

describe('StepExecutor', () => {
  it('fails only the agent step whose reply queue could not be made; the retry makes one anew', async () => {
    const clock = new VirtualClock();
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
    const { engine, supervisor } = engineSetup({ clock, messaging });
    const agent = await new RemoteAgent({ messaging, queue: 'payments', handler: () => 'paid' }).start();
    // The engine's first reply queue cannot be made, as when a loaded SQLite file stays busy past its timeout.
    const createQueue = messaging.createQueue.bind(messaging);
    let refusals = 1;
    messaging.createQueue = async (...args) => {
      if (refusals-- > 0) throw new Error('database is locked');
      return createQueue(...args);
    };
    engine.register(
      defineWorkflow({ name: 'pay', steps: [{ name: 'charge', agent: 'payments', timeoutMs: 1_000 }] }),
    );
    const run = await engine.start('pay', null, { id: 'p-1' });
    const stepStatus = async () => (await run.status()).stepStatus;
    await waitUntil(async () => (await stepStatus()) === 'error', 'the first attempt failed');
    assert.equal(await supervisor.sweep(), 1);
    await settle(clock, 100);
    await waitUntil(async () => (await stepStatus()) !== 'processing', 'the retry ended');
    const { status, stepStatus: after, results } = await run.status();
    assert.deepEqual(
      { status, after, results },
      { status: 'completed', after: 'processed', results: { charge: 'paid' } },
    );
    await agent.close();
    await engine.close();
    await messaging.close();
  });
});
